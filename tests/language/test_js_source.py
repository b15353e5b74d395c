"""The JavaScript tokenizer that finds what an expression reads: each kind of token, and where context decides."""

import pytest
from hypothesis import given, strategies as st

from wfexec.language.js_source import TokenError, scan, tokenize, usage


def kinds(source: str) -> list[tuple[str, str]]:
    return [(token.kind, token.text) for token in tokenize(source)]


def test_numbers_names_and_punctuation_keep_their_longest_reading():
    assert kinds("a?.b ?? .5 + 0x1F >>>= x...y") == [
        ("name", "a"), ("punct", "?."), ("name", "b"), ("punct", "??"), ("number", ".5"), ("punct", "+"),
        ("number", "0x1F"), ("punct", ">>>="), ("name", "x"), ("punct", "..."), ("name", "y")]
    assert kinds("c?.5:1") == [("name", "c"), ("punct", "?"), ("number", ".5"), ("punct", ":"), ("number", "1")]
    # any script's digits start a number, not a name (`\d`): `٣x` is a number and a name, as JavaScript reads it
    assert kinds("٣x + x٣") == [("number", "٣"), ("name", "x"), ("punct", "+"), ("name", "x٣")]


def test_a_slash_is_a_regular_expression_or_a_division_by_what_comes_before():
    assert kinds("a / b / c") == [("name", "a"), ("punct", "/"), ("name", "b"), ("punct", "/"), ("name", "c")]
    assert kinds("x = /a[/]b/g.test(s)")[2] == ("regex", "/a[/]b/g")
    assert kinds("return /x/")[1] == ("regex", "/x/")
    assert kinds("a /= 2 // the rest\n/* and this */ b") == [("name", "a"), ("punct", "/="), ("number", "2"),
                                                            ("name", "b")]


def test_strings_and_template_literals_hide_their_text_but_not_their_expressions():
    assert kinds("'it\\'s' + \"x\"") == [("string", "'it\\'s'"), ("punct", "+"), ("string", '"x"')]
    assert kinds("`a ${ {k: v}.k } b ${w}`") == [
        ("template", "`a ${"), ("punct", "{"), ("name", "k"), ("punct", ":"), ("name", "v"), ("punct", "}"),
        ("punct", "."), ("name", "k"), ("template", "} b ${"), ("name", "w"), ("template", "}`")]
    assert usage("`${a.b}` + 'c'").reads == {"a": {"b"}}


@pytest.mark.parametrize("source, expected", [
    ("'a\\\\' + b", [("string", "'a\\\\'"), ("punct", "+"), ("name", "b")]),  # an escaped backslash ends no string
    ("\"x\\\"y\" z", [("string", '"x\\"y"'), ("name", "z")]),
    ("'one \\\ntwo'", [("string", "'one \\\ntwo'")]),  # a line continued by `\` inside a string
    ("'\"' + \"'\"", [("string", "'\"'"), ("punct", "+"), ("string", '"\'"')]),  # the other quote is text
    ("`$ \\` $${a}`", [("template", "`$ \\` $${"), ("name", "a"), ("template", "}`")]),  # `$` alone, escaped backtick
    ("`\\${a}`", [("template", "`\\${a}`")]),  # an escaped `${` opens nothing
    ("`line\nnext`", [("template", "`line\nnext`")]),
])
def test_escapes_inside_strings_and_template_literals_are_text(source, expected):
    assert kinds(source) == expected


def test_token_offsets_count_from_the_start_of_the_source():
    assert [token.start for token in tokenize("  ab\t+ 'c'")] == [2, 5, 7]


# Tokens whose reading needs no context (no `/`, whose meaning does), each kind with what it can look like.
_TOKENS = st.one_of(
    st.tuples(st.just("name"), st.from_regex(r"[A-Za-z_$][A-Za-z0-9_$]{0,6}", fullmatch=True)
              | st.sampled_from(["é", "名前", "x٣", "ü_1"])),
    st.tuples(st.just("number"), st.sampled_from(["0", "12", "1.5", ".5", "1e5", "2E-3", "0x1F", "0b101", "10n",
                                                  "1_000"])),
    st.tuples(st.just("punct"), st.sampled_from([">>>=", "...", "===", "!==", "**=", "?.", "??", "??=", "=>", "+",
                                                 "++", "-", "(", ")", "[", "]", "{", "}", ";", ",", "?", ":", "=",
                                                 "!", "~", "@", "#", "%", "&&", "||", "|", "^", "<<", ">="])),
    st.tuples(st.just("string"), st.sampled_from(["'a'", '"b c"', "'it\\'s'", '""', "'${x}'"])),
)
_BETWEEN = st.sampled_from([" ", "  ", "\t", "\n", "\r\n", "\u00a0", " // a note\n", "/* c */", " /**/ "])


@given(st.lists(st.tuples(_BETWEEN, _TOKENS), max_size=30), _BETWEEN)
def test_tokens_apart_are_read_back_each_where_it_starts(pieces, last):
    source, expected = "", []
    for between, (kind, text) in pieces:
        source += between
        expected.append((kind, text, len(source)))
        source += text
    source += last
    assert [(token.kind, token.text, token.start) for token in tokenize(source)] == expected


# Any text: the pieces of JavaScript where reading differs, in any order, with anything between them.
_PIECES = st.sampled_from(["a", "é", "x٣", "0", ".5", "1.5", "1e5", "10n", "'s'", '"d"', "`t${", "}", "`", "{", "/",
                           "/=", "//c\n", "/*c*/", "/re/g", " ", "\n", "\u2028", ".", "...", "?.", "??=", "=>", "===",
                           ">>>=", "(", ")", "[", ";", ",", "#", ":", "+", "²", "😀", "\\", "'open"])


@given(st.lists(_PIECES, max_size=25).map("".join))
def test_reading_names_only_finds_the_tokens_and_errors_a_full_tokenize_finds(source):
    """`scan` leaves out where tokens start (most sources are read for their names alone): the same tokens
    come back, the starts when asked for, and the same error, at the same place."""
    try:
        expected = tokenize(source)
    except TokenError as error:
        with pytest.raises(TokenError) as raised:
            scan(source)
        assert (str(raised.value), raised.value.offset) == (str(error), error.offset)
        return
    scanned = scan(source)
    assert list(zip(scanned.kinds, scanned.texts)) == [(token.kind, token.text) for token in expected]
    assert scanned.starts == [token.start for token in expected]


@pytest.mark.parametrize("source, expected", [
    ("", []), (" \t\n\u00a0\u2028", []), ("a \n", [("name", "a")]), ("a // the end", [("name", "a")]),
    ("// only this\n  ", []), ("\ufeffx\u2029+\u00a0 1 ", [("name", "x"), ("punct", "+"), ("number", "1")]),
])
def test_blanks_and_line_comments_anywhere_make_no_token(source, expected):
    assert kinds(source) == expected


@pytest.mark.parametrize("source, message, offset", [
    ("a + 'b", "unterminated string literal", 4),
    ("'line\nbreak'", "unterminated string literal", 0),  # only a `\` continues a string past its line
    ("'ends in \\", "unterminated string literal", 0),
    ("`x \\", "unterminated template literal", 0),
    ("`x ${y}", "unterminated template literal", 6),
    ("/* no end", "unclosed comment `/*`", 0),
    ("a \u00b2 b", "unexpected character '²'", 2),
    ("a 😀", "unexpected character '😀'", 2),
])
def test_broken_sources_say_what_and_where(source, message, offset):
    with pytest.raises(TokenError) as raised:
        tokenize(source)
    assert str(raised.value) == message and raised.value.offset == offset


def test_a_source_without_quotes_slashes_or_closing_braces_is_read_in_one_go_with_each_kind_right(monkeypatch):
    """The common source (no string, regex, comment or block end) is read without searching it for those, and each
    piece's kind is remembered by its text, within a bound: `.5` is a number, `.`, `...` and `?.` punctuation,
    a name past ASCII a name, a digit of another script a number, and a character no token starts with an error
    each time it is met."""
    from wfexec.language import js_source

    class Refused:
        def search(self, *_):
            raise AssertionError("searched a source that holds none of the special characters")

    monkeypatch.setattr(js_source, "_SPECIAL", Refused())
    monkeypatch.setattr(js_source._KindByPiece, "KEPT", 4)
    for _ in range(2):  # the second time from what the first remembered
        scanned = scan("a.b + .5 * f(...xs) ?? é?.c + ٣ + {k: 1")
        assert list(zip(scanned.kinds, scanned.texts)) == [
            ("name", "a"), ("punct", "."), ("name", "b"), ("punct", "+"), ("number", ".5"), ("punct", "*"),
            ("name", "f"), ("punct", "("), ("punct", "..."), ("name", "xs"), ("punct", ")"), ("punct", "??"),
            ("name", "é"), ("punct", "?."), ("name", "c"), ("punct", "+"), ("number", "٣"), ("punct", "+"),
            ("punct", "{"), ("name", "k"), ("punct", ":"), ("number", "1")]
        assert len(js_source._KIND_BY_PIECE) <= 4
        with pytest.raises(TokenError, match="unexpected character '\\\\x01'") as error:
            scan("a + \x01")
        assert error.value.offset == 4
