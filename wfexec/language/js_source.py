"""What a piece of JavaScript reads, declares and calls, found without a full parser.

wfexec hands each expression only the names it reads (sending the whole run
state costs hundreds of times more than the expression), so it needs the free
identifiers of the source. A tokenizer is enough: it knows strings, template
literals (with their `${...}` parts), regular-expression literals, comments
and numbers, so none of those are mistaken for names, and it drops
identifiers that are property names (after `.` or `?.`, or object keys).
What it cannot tell apart exactly (a name declared in an inner scope and also
used free elsewhere) it reports as read: an extra name costs a lookup that
finds nothing.

A source with nothing that needs the tokenizer's context (no template,
escape, comment, regular expression, block or blank beside a dot:
`simple_usage`) has its names found in place by one regular expression
instead, to the same result.
"""

from __future__ import annotations

import re

from wfexec.records import dataclass, field
from wfexec.system.patterns import lazy

KEYWORDS = frozenset("""
await break case catch class const continue debugger default delete do else enum export extends false finally
for function if import in instanceof let new null of return static super switch this throw true try typeof var
void while with yield
""".split())  # `get`, `set`, `async`, `static` are names too outside the places they are keywords

# After these a `/` starts a regular expression, not a division.
_REGEX_AFTER_WORDS = frozenset("return typeof instanceof in of new delete void throw case do else yield await".split())
_DECLARE_WORDS = frozenset(("const", "let", "var"))

# Past ASCII, any character starts or continues a name except the blanks JavaScript knows there (line and
# paragraph separators, the byte-order mark), which end it.
_NON_ASCII = r"\u00c0-\u2027\u202a-\ufefe\uff00-\uffff"
# The same characters as one negated class: the regex compiler walks each code point of a class's ranges, so
# `[{_NON_ASCII}]` takes ~2.5 ms to compile, and this a tenth of that. Used where a piece is rarely tried.
_NON_ASCII_CHAR = r"[^\x00-\xbf\u2028\u2029\ufeff\U00010000-\U0010ffff]"
_NUMBER_PATTERN = (r"0[xX][0-9a-fA-F_]+n?|0[oO][0-7_]+n?|0[bB][01_]+n?"
                   r"|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][+-]?\d+)?n?")
_PUNCT = re.compile(r">>>=|\.\.\.|===|!==|\*\*=|<<=|>>=|>>>|\?\?=|&&=|\|\|=|=>|==|!=|<=|>=|&&|\|\||\?\?|\?\.(?!\d)|"
                    r"\+\+|--|\+=|-=|\*=|/=|%=|&=|\|=|\^=|\*\*|<<|>>|[{}()\[\];,<>+\-*/%&|^!~?:=.@#]")
_BLANKS = " \t\r\n\u00a0\ufeff\u2028\u2029"
# _PUNCT less `/` (which, like `}`, ends a stretch), branching on the first character: one branch tried where
# _PUNCT's alternatives are tried in turn, which made punctuation the dearest piece to read.
_PUNCT_BY_FIRST = (r"[{}()\[\];,~@#:]|=(?:==?|>)?|\.\.\.|\.(?!\d)|!=?=?|<<?=?|>>?>?=?|\*\*?=?|\+[+=]?|-[-=]?|%=?"
                   r"|&&?=?|\|\|?=?|\^=?|\?(?:\?=?|\.(?!\d))?")
# What needs no context is read a stretch at a time, up to the next character whose meaning does: a quote, a
# backtick, `/` (division, a regular expression or a comment) or `}` (a block's end or a template literal's
# `${...}`'s). One `findall` reads a stretch's numbers, names and punctuation (and any other character, alone: a
# mistake) in C, past the blanks before each; each piece's first character says what it is.
# Compiled on the first tokenize: the Unicode ranges take ~5 ms, and a cached workflow runs without tokenizing.
# Names of ASCII letters first (most pieces); a name past ASCII only after numbers, whose `\d` reads any script's
# digits: `٣x` is the number `٣` and the name `x`, as it was read before names came first.
_SIMPLE = lazy(rf"[{_BLANKS}]*([A-Za-z_$][\w${_NON_ASCII}]*|{_PUNCT_BY_FIRST}|{_NUMBER_PATTERN}"
               rf"|{_NON_ASCII_CHAR}(?:[\w$]|{_NON_ASCII_CHAR})*|[^'\"`/}}{_BLANKS}])")
_SPECIAL = lazy(r"['\"`/}]")
_NAME_START_PAST_ASCII = lazy(_NON_ASCII_CHAR)
# A string literal from its quote, and a template literal's piece after its backtick or `}` up to the next `${` or
# the closing backtick: `\\` escapes the character after it (a line's end too); a string ends at its line's end.
_SINGLE_QUOTED = lazy(r"'[^'\\\n]*(?:\\[\s\S][^'\\\n]*)*'")
_DOUBLE_QUOTED = lazy(r'"[^"\\\n]*(?:\\[\s\S][^"\\\n]*)*"')
_TEMPLATE_PIECE = lazy(r"[^`\\$]*(?:(?:\\[\s\S]|\$(?!\{))[^`\\$]*)*(?:`|\$\{)")
_KIND_BY_FIRST = {**dict.fromkeys("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_$", "name"),
                  **dict.fromkeys("0123456789", "number"), **dict.fromkeys("{}()[];,<>+-*%&|^!~?:=@#.", "punct")}


def _kind(text: str) -> str | None:
    """What a piece starting with `.` or a character past ASCII is; None: a character no token starts with."""
    first = text[0]
    if first == ".":
        return "number" if text[1:2].isdecimal() else "punct"
    if first.isdecimal():  # `\d` reads any script's digits, as it did
        return "number"
    return "name" if _NAME_START_PAST_ASCII.match(first) else None


@dataclass(slots=True)  # an expression makes one per token: without a __dict__ each costs a sixth less
class Token:
    kind: str      # name, number, string, template, regex, punct
    text: str
    start: int     # offset in the source


class TokenError(ValueError):
    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.offset = offset


class Scanned:
    """The tokens of a source as lists (kind, text and offset of each): what `usage` and the fast path read.
    Making a Token object per token cost about a quarter of tokenizing a long expression."""

    __slots__ = ("kinds", "texts", "_starts", "_source")

    def __init__(self, source: str = "", with_starts: bool = False) -> None:
        self.kinds: list[str] = []
        self.texts: list[str] = []
        self._starts: list[int] | None = [] if with_starts else None
        self._source = source

    def add(self, kind: str, text: str, start: int) -> None:
        self.kinds.append(kind)
        self.texts.append(text)
        if self._starts is not None:
            self._starts.append(start)

    @property
    def starts(self) -> list[int]:
        """Where each token starts in the source (scanned again the first time, when the first scan left it)."""
        if self._starts is None:
            self._starts = scan(self._source, with_starts=True)._starts
        return self._starts  # type: ignore[return-value]

    def __len__(self) -> int:
        return len(self.texts)


def tokenize(source: str) -> list[Token]:
    """The tokens of `source`; the expressions inside template literals are tokenized in place
    (a template literal becomes a `template` token per literal piece around them)."""
    scanned = scan(source, with_starts=True)
    return list(map(Token, scanned.kinds, scanned.texts, scanned.starts))


def scan(source: str, with_starts: bool = False) -> Scanned:
    """`tokenize`'s tokens, as lists. Where each token starts is found when `starts` is first read: most
    sources are only read for their names (`with_starts`: found now)."""
    scanned = Scanned(source, with_starts)
    kinds, texts, starts = scanned.kinds, scanned.texts, scanned._starts
    braces: list[str] = []  # "{" for a block/object, "`" for a `${` inside a template literal
    # Most sources hold none of them (no string, no `/`, no block): five `in` cost a tenth of one regex search.
    next_special = _SPECIAL.search if "'" in source or '"' in source or "`" in source or "/" in source or \
        "}" in source else None
    i, n = 0, len(source)
    while i < n:
        special = next_special(source, i) if next_special is not None else None
        stop = special.start() if special is not None else n
        if with_starts:
            matches = list(_SIMPLE.finditer(source, i, stop))
            pieces = [match.group(1) for match in matches]
        else:
            pieces = _SIMPLE.findall(source, i, stop)
        piece_kinds, unread = _kinds_of(pieces)
        if unread is not None:  # a character no token starts with
            if not with_starts:
                return scan(source, with_starts=True)  # which says where
            bad = matches[unread]
            raise TokenError(f"unexpected character {bad.group(1)[0]!r}", bad.start(1))
        kinds += piece_kinds
        texts += pieces
        if starts is not None:
            starts += [match.start(1) for match in matches]
        braces += "{" * source.count("{", i, stop)  # each `{` of a stretch is a piece: no string holds it
        if stop < n:
            i = _special(source, stop, scanned, braces)
        else:
            i = n
    return scanned


_UNREAD = "?"  # the kind of a piece no token starts with: a length no kind has, so `in` tells it apart quickly


class _KindByPiece(dict):
    """A piece's kind by its whole text, worked out the first time the text is read: one lookup in C a piece, where
    finding it by the first character made a one-character string a piece and then looked that up (a fifth of
    tokenizing a long expression), and looked for `.5` in the stretch again. Emptied when big: names are many."""

    KEPT = 20_000

    def __init__(self) -> None:
        super().__init__()
        self.unread = 0  # how many pieces no token starts with were met (a cheap "was there one?")

    def __missing__(self, piece: str) -> str:
        first = piece[0]
        kind = _kind(piece) if first == "." else _KIND_BY_FIRST.get(first) or _kind(piece)
        if kind is None:
            self.unread += 1
            return _UNREAD
        if len(self) >= self.KEPT:
            self.clear()
        self[piece] = kind
        return kind


_KIND_BY_PIECE = _KindByPiece()


def _kinds_of(pieces: list[str]) -> tuple[list, int | None]:
    """Each piece's kind; and the index of the first piece no token starts with (None: there is none)."""
    unread = _KIND_BY_PIECE.unread
    kinds = list(map(_KIND_BY_PIECE.__getitem__, pieces))
    if _KIND_BY_PIECE.unread != unread and _UNREAD in kinds:  # (another thread's may have been counted)
        return kinds, kinds.index(_UNREAD)
    return kinds, None


def _special(source: str, i: int, tokens: Scanned, braces: list[str]) -> int:
    """The token at `i` that starts with a quote, a backtick, `/` or `}`; where the next one starts."""
    ch = source[i]
    if ch in "'\"":
        end = _string_end(source, i)
        tokens.add("string", source[i:end], i)
        return end
    if ch == "`" or (ch == "}" and braces and braces[-1] == "`"):
        if ch == "}":
            braces.pop()
        return _template_piece(source, i, tokens, braces)
    if ch == "}":
        if braces:
            braces.pop()
        tokens.add("punct", "}", i)
        return i + 1
    if source.startswith("//", i):
        end = source.find("\n", i)
        return len(source) if end < 0 else end
    if source.startswith("/*", i):
        end = source.find("*/", i + 2)
        if end < 0:
            raise TokenError("unclosed comment `/*`", i)
        return end + 2
    if _regex_allowed(tokens):
        end = _regex_end(source, i)
        tokens.add("regex", source[i:end], i)
        return end
    match = _PUNCT.match(source, i)  # `/` or `/=`
    assert match is not None
    tokens.add("punct", match.group(), i)
    return match.end()


def _string_end(source: str, start: int) -> int:
    # One regular expression (in C) for the body instead of a Python step per character: tokenizing the hiivmind
    # corpus's expressions that quote something costs 6% less.
    end = (_SINGLE_QUOTED if source[start] == "'" else _DOUBLE_QUOTED).match(source, start)
    if end is None:
        raise TokenError("unterminated string literal", start)
    return end.end()


def _template_piece(source: str, start: int, tokens: Scanned, braces: list[str]) -> int:
    """From a backtick (or the `}` ending a `${...}`) to the next `${` or the closing backtick."""
    piece = _TEMPLATE_PIECE.match(source, start + 1)
    if piece is None:
        raise TokenError("unterminated template literal", start)
    end = piece.end()
    tokens.add("template", source[start:end], start)
    if source[end - 1] == "{":
        braces.append("`")
    return end


def _regex_allowed(tokens: Scanned) -> bool:
    if not tokens.texts:
        return True
    kind, text = tokens.kinds[-1], tokens.texts[-1]
    if kind in ("number", "string", "regex"):
        return False
    if kind == "template":
        return text.endswith("${")
    if kind == "name":
        return text in _REGEX_AFTER_WORDS
    return text not in (")", "]", "}", "++", "--")


def _regex_end(source: str, start: int) -> int:
    i = start + 1
    in_class = False
    while i < len(source):
        ch = source[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "\n":
            break
        if ch == "[":
            in_class = True
        elif ch == "]":
            in_class = False
        elif ch == "/" and not in_class:
            i += 1
            while i < len(source) and (source[i].isalnum() or source[i] == "_"):
                i += 1
            return i
        i += 1
    raise TokenError("unterminated regular expression literal", start)


@dataclass
class Usage:
    """The identifiers of a source, by role."""

    reads: dict[str, set[str] | None] = field(default_factory=dict)  # free name -> keys read below it (None: any)
    declared: set[str] = field(default_factory=set)                   # const/let/var/function/class/params/catch
    calls: dict[str, int] = field(default_factory=dict)               # bare name called `f(...)` -> its token

    @property
    def free(self) -> set[str]:
        """Names read and not declared anywhere in the source."""
        return set(self.reads) - self.declared


_ACCESSOR_WORDS = ("get", "set", "async", "static")
_OPENING = frozenset("([{")
_CLOSING = frozenset(")]}")
_MEMBER_MARKS = frozenset((".", "?.", "#"))


def usage(source: str, tokens: Scanned | None = None) -> Usage:
    """Free names, declarations and bare calls of a JavaScript source (raises TokenError); `tokens`: its tokens,
    when the caller has them (a call is named by its index in them: pass them to say where a call is)."""
    if tokens is None:
        tokens = scan(source)
    kinds, texts = tokens.kinds, tokens.texts
    found = Usage()
    declared, reads = found.declared, found.reads
    brackets: list[str] = []  # the opening bracket of each enclosing (, [, {
    calls = found.calls
    last = len(texts) - 1
    for index, kind in enumerate(kinds):
        if kind != "name":
            if kind == "punct":
                text = texts[index]
                if text in _OPENING:
                    brackets.append(text)
                elif text in _CLOSING:
                    if brackets:
                        brackets.pop()
                elif text == "=>":
                    _arrow_params(tokens, index, declared)
            elif kind == "template":
                text = texts[index]
                if text.endswith("${"):
                    brackets.append("{")
                if not text.startswith("`") and brackets:
                    brackets.pop()
            continue
        # Only punctuation reads `.`, `?.` or `#`, and only a name reads `function` or `class`: the texts say
        # the kinds.
        text = texts[index]
        before = texts[index - 1] if index else None
        if before in _MEMBER_MARKS:
            continue
        after = texts[index + 1] if index < last else None
        if before == "function" or before == "class":
            declared.add(text)
            _function_params(tokens, index + 1, declared)
            continue
        if text in KEYWORDS:
            if text in _DECLARE_WORDS:
                _declaration(tokens, index + 1, declared)
            elif (text == "function" or text == "catch") and after == "(":
                _function_params(tokens, index + 1, declared)
            continue
        in_object = bool(brackets) and brackets[-1] == "{"
        if in_object:
            if after == ":" and (before == "{" or before == ","):
                continue  # an object key (or a label)
            if text in _ACCESSOR_WORDS and index + 2 <= last and kinds[index + 1] == "name" and \
                    texts[index + 2] == "(" and (before == "{" or before == ","):
                continue  # `get`/`set`/`async` before a method's name: `{ get a() { ... } }`
            if after == "(" and before is not None and (
                    before in ("{", ",", "*") or (before in _ACCESSOR_WORDS and index >= 2
                                                   and texts[index - 2] in ("{", ","))):
                _function_params(tokens, index + 1, declared)
                continue  # a method in an object literal: `{ f() { ... } }`, `{ get f() { ... } }`
        if text in reads:
            keys = reads[text]
            if keys is not None:
                if after == "." and index + 2 <= last and kinds[index + 2] == "name":
                    keys.add(texts[index + 2])
                else:
                    reads[text] = None
        elif after == "." and index + 2 <= last and kinds[index + 2] == "name":
            reads[text] = {texts[index + 2]}
        else:
            reads[text] = None
        if after == "(" and text not in calls:
            calls[text] = index
    return found


# `simple_usage`'s sources, once their plain strings are blanked: names, numbers, blanks and punctuation, nothing
# past ASCII. Without a quote, a backtick, `/`, `\`, a brace, `#` or `@` a source holds no string with an escape,
# template, regular expression, comment, block, object literal, class or private name: the only things `usage`
# reads in context.
_SIMPLE_SOURCE = lazy(r"[A-Za-z0-9_$ \t\r\n().,;:?!=<>+\-*%&|^~\[\]]*")  # one bitmap: `\w` is tested apart
# Each name read, found where it stands rather than token by token: (the name, the key read below it in `a.b`,
# `(` or `=>` after the name and the keys read below it). A name starts after no word character (the `e5` of
# `1e5` or the `x1f` of `0x1f` is part of a number, as the tokenizer reads it) and after no member mark: a dot
# before it must end a `...`, since a simple source has no `..`. sre looks for the next match from a name's first
# character, skipping every other character in C: a pattern that started otherwise was tried at each place, and
# cost more than the tokenizer did.
_NAME_IN_PLACE = lazy(r"([A-Za-z_$](?<![\w$][A-Za-z_$])(?<![^.]\.[A-Za-z_$])[\w$]*)"
                      r"(?:\.([A-Za-z_$][\w$]*))?[\w$.]*\s*(\(|=>)?", re.ASCII)
_PLAIN_STRING = lazy(r"'[^'\\\n]*'|\"[^\"\\\n]*\"")  # no escape in it, so it ends at its next quote
_PLAIN_PARAMS = lazy(r"[\w$,\s]*", re.ASCII)  # names and commas: bound as they stand
# What a name and its keys read whole cannot take: a dot with a blank after it, or before it and a name after it
# (`a\n  .map(f)`); two dots (`1..toString()`) or four. Searched from each dot (sre's literal prefix).
_DOT_APART = lazy(r"\.(?:\s|\.\.\.|(?<!\.\.)\.(?!\.)|(?<=\s\.)(?=[A-Za-z_$]))")


def simple_usage(source: str) -> Usage | None:
    """`usage(source)` for a source no fast-path expression could be (it holds `,`, `[` or `=>`) and that needs no
    tokenizer: names, numbers, strings without escapes and punctuation only (`_SIMPLE_SOURCE`), no declaration, no
    lone `|` (a jq filter's pipe, which `Expression` looks for among the tokens), no dot apart (`_DOT_APART`),
    arrow parameters that are plain names. One regular expression finds the names in place, each with what stands
    beside it, where tokenizing made a piece of every number and mark and then walked them all in Python: a third
    of checking a long `compute`. A call's index is its name's place among the names, not among the tokens.
    None: `usage` must read it."""
    if not ("," in source or "[" in source or "=>" in source):
        return None
    if "'" in source or '"' in source:
        # A string without an escape reads as the number 0 would: no name, no mark, no context inside it.
        source = _PLAIN_STRING.sub("0", source)
        if not ("," in source or "[" in source or "=>" in source):
            return None  # they were inside the strings
    if _SIMPLE_SOURCE.fullmatch(source) is None:
        return None
    if "|" in source and "|" in source.replace("||", "").replace("|=", ""):
        return None
    if "." in source and _DOT_APART.search(source) is not None:
        return None
    found = Usage({}, set(), {})
    declared, reads, calls = found.declared, found.reads, found.calls
    for index, (name, key, after) in enumerate(_NAME_IN_PLACE.findall(source)):
        if name in KEYWORDS:
            if name in _DECLARE_WORDS:
                return None
            if after == "=>" and not key:
                declared.add(name)  # `of => ...`: as `usage` binds it
            continue
        if name in reads:
            keys = reads[name]
            if keys is not None:
                if key:
                    keys.add(key)
                else:
                    reads[name] = None
        else:
            reads[name] = {key} if key else None
        if key:
            continue
        if after == "(":
            if name not in calls:
                calls[name] = index
        elif after:  # `x => ...`
            declared.add(name)
    arrow = source.find("=>")
    while arrow >= 0:
        close = arrow - 1
        while close >= 0 and source[close] in " \t\r\n":
            close -= 1
        if close >= 0 and source[close] == ")":  # `(a, b) => ...`: what the brackets hold is bound
            params = source[source.rfind("(", 0, close) + 1:close]
            if _PLAIN_PARAMS.fullmatch(params) is None:
                return None  # a pattern, a default or a rest parameter: the tokens tell
            for bound in params.split(","):
                bound = bound.strip()
                if bound and bound not in KEYWORDS:
                    declared.add(bound)
        arrow = source.find("=>", arrow + 2)
    return found


def _arrow_params(tokens: Scanned, arrow: int, declared: set[str]) -> None:
    if not arrow:
        return
    texts = tokens.texts
    if tokens.kinds[arrow - 1] == "name":
        declared.add(texts[arrow - 1])
        return
    if texts[arrow - 1] != ")":
        return
    depth = 0
    for j in range(arrow - 1, -1, -1):
        text = texts[j]
        if text in (")", "]", "}"):
            depth += 1
        elif text in ("(", "[", "{"):
            depth -= 1
            if depth == 0:
                _pattern_names(tokens, j + 1, arrow - 1, declared)
                return


def _function_params(tokens: Scanned, start: int, declared: set[str]) -> None:
    texts = tokens.texts
    if start >= len(texts) or texts[start] != "(":
        return
    depth = 0
    for j in range(start, len(texts)):
        text = texts[j]
        if text in ("(", "[", "{"):
            depth += 1
        elif text in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                _pattern_names(tokens, start + 1, j, declared)
                return


def _declaration(tokens: Scanned, start: int, declared: set[str]) -> None:
    """`const a = ..., {b, c: d} = ..., [e] = ...`: the names bound, up to the end of the statement."""
    kinds, texts = tokens.kinds, tokens.texts
    depth = 0
    expecting_name = True
    for j in range(start, len(texts)):
        kind, text = kinds[j], texts[j]
        if expecting_name:
            if kind == "name":
                declared.add(text)
                expecting_name = False
                continue
            if text in ("{", "["):
                end = _matching(texts, j)
                _pattern_names(tokens, j + 1, end, declared)
                expecting_name = False
                continue
        if text in ("(", "[", "{"):
            depth += 1
        elif text in (")", "]", "}"):
            depth -= 1
            if depth < 0:
                return
        elif depth == 0 and text == ",":
            expecting_name = True
        elif depth == 0 and text in (";",) or (depth == 0 and kind == "name" and text in ("of", "in")):
            return


def _matching(texts: list[str], start: int) -> int:
    depth = 0
    for j in range(start, len(texts)):
        if texts[j] in ("(", "[", "{"):
            depth += 1
        elif texts[j] in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                return j
    return len(texts)


def _pattern_names(tokens: Scanned, start: int, end: int, declared: set[str]) -> None:
    """The names a parameter list or destructuring pattern (the tokens from `start` up to `end`) binds (defaults
    are skipped over roughly: a name after `=` is a read, and counting it as bound only hides a warning)."""
    kinds, texts = tokens.kinds, tokens.texts
    for j in range(start, end):
        if kinds[j] != "name" or texts[j] in KEYWORDS:
            continue
        if j + 1 < end and texts[j + 1] == ":":
            continue  # `{ key: name }`: the key is not bound
        declared.add(texts[j])


_ASSIGNING = frozenset(("=", "+=", "-=", "*=", "/=", "%=", "**=", "<<=", ">>=", ">>>=", "&=", "|=", "^=", "&&=",
                        "||=", "??=", "++", "--"))


def optional_members(source: str) -> str:
    """`source` with each property read `a.b` written `a?.b`, so a read below a missing value gives `undefined`
    (`== null` is true) instead of throwing: blueprint-lib v8 reads a missing path as null. A source that
    assigns or uses `new` is returned as it is (`a?.b = 1` and `new a?.B()` are not JavaScript)."""
    tokens = scan(source, with_starts=True)
    kinds, texts, starts = tokens.kinds, tokens.texts, tokens.starts
    if any(kind == "punct" and text in _ASSIGNING for kind, text in zip(kinds, texts)) or \
            any(kind == "name" and text == "new" for kind, text in zip(kinds, texts)):
        return source
    pieces, last = [], 0
    count = len(texts)
    for index, kind in enumerate(kinds):
        text = texts[index]
        if kind != "punct" or text not in (".", "[") or index == 0 or index + 1 == count:
            continue
        before = texts[index - 1]
        if not (before in (")", "]") or (kinds[index - 1] == "name" and before not in KEYWORDS - {"this"})):
            continue  # `[` there starts an array, `.` follows a number or a string
        start = starts[index]
        if text == "[":
            pieces.append(source[last:start])
            pieces.append("?.[")
            last = start + 1
            continue
        if kinds[index + 1] != "name":
            continue
        if index + 2 < count and kinds[index + 2] == "template" and texts[index + 2][0] == "`":
            continue  # a tagged template `a.b`…``: `a?.b`…`` is not JavaScript
        pieces.append(source[last:start])
        pieces.append("?.")
        last = start + 1
    pieces.append(source[last:])
    return "".join(pieces)
