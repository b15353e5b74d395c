"""Tag parsing: checklist items 1–20 of reference/raymond-state-protocol.md §4 (Parsing).

Covered here: 1–15, 18, 20 (as parser behaviour); 16 and 17 are Raymond tags wfexec does not take
(cross-workflow tags, `<ask>`): the parser recognises them only so that a state using one gets a clear
refusal (tested here and in test_protocol_scripts.py). 19 (streamed `<print>` with a timeout) runs
real bash in test_protocol_scripts.py. DESIGN §4 difference tested here: a word boundary after the tag name.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wfexec.protocol.tags import (TRANSITION_TAGS, PrintScanner, TagError, Transition, _next_opening, extract_prints,
                                  parse_transitions)


def one(text: str) -> Transition:
    found = parse_transitions(text)
    assert len(found) == 1, found
    return found[0]


def test_item1_goto_with_text_before():
    t = one("text\n<goto>FILE.md</goto>")
    assert (t.tag, t.target, t.attributes, t.payload) == ("goto", "FILE.md", {}, "")


def test_item2_reset():
    t = one("<reset>FILE.md</reset>")
    assert (t.tag, t.target) == ("reset", "FILE.md")


def test_item3_result_keeps_the_exact_payload():
    t = one("<result>Task finished successfully</result>")
    assert (t.tag, t.target, t.payload) == ("result", "", "Task finished successfully")


@pytest.mark.parametrize("tag", ["function", "call"])
def test_item4_function_and_call_carry_return(tag):
    t = one(f'<{tag} return="X.md">Y.md</{tag}>')
    assert (t.tag, t.target, t.attributes) == (tag, "Y.md", {"return": "X.md"})


def test_item5_several_attributes():
    t = one('<fork next="X.md" item="foo" priority="high">Y.md</fork>')
    assert t.attributes == {"next": "X.md", "item": "foo", "priority": "high"}
    assert t.target == "Y.md"


def test_item6_single_quotes_and_unquoted_values():
    assert one("<call return='X.md'>Y.md</call>").attributes == {"return": "X.md"}
    # Unquoted values are not attributes (so a missing `return` is reported later).
    assert one("<call return=X.md>Y.md</call>").attributes == {}
    # A repeated key: the last one wins; hyphenated keys are not attributes.
    assert one('<fork next="A" next="B" my-key="z">W</fork>').attributes == {"next": "B"}


def test_item7_tag_in_the_middle_of_text():
    assert one("I reviewed it. <goto>NEXT.md</goto> And more text after.").target == "NEXT.md"


def test_item8_no_tags_is_an_empty_list():
    assert parse_transitions("just prose, no tags") == []
    assert parse_transitions("") == []


def test_item9_two_gotos_in_document_order():
    found = parse_transitions("<goto>A.md</goto> then <goto>B.md</goto>")
    assert [t.target for t in found] == ["A.md", "B.md"]


@pytest.mark.parametrize("target", ["../FILE.md", "foo/bar.md", "C:\\FILE.md"])
def test_item10_path_separators_are_rejected(target):
    with pytest.raises(TagError, match="contains a path separator"):
        parse_transitions(f"<goto>{target}</goto>")


def test_item11_dots_in_a_name_are_fine():
    assert one("<goto>my.file.name.md</goto>").target == "my.file.name.md"


@pytest.mark.parametrize("text", ["<goto></goto>", "<goto>   </goto>", "<reset></reset>",
                                  '<function return="X.md"></function>'])
def test_item12_empty_targets(text):
    with pytest.raises(TagError, match="empty target"):
        parse_transitions(text)


def test_item13_result_payload_empty_or_multiline_kept_raw():
    assert one("<result></result>").payload == ""
    assert one("<result>\nline one\n  line two\n</result>").payload == "\nline one\n  line two\n"


def test_item14_unknown_tags_are_ignored():
    t = one("<div>something</div><goto>FILE.md</goto>")
    assert t.target == "FILE.md"


def test_item15_empty_attribute_value_is_kept():
    assert one('<fork next="NEXT.md" item="">WORKER.md</fork>').attributes["item"] == ""


def test_item16_cross_workflow_tags_are_recognised_for_refusal():
    t = one('<call-workflow return="R.md">some/nested/workflow.md</call-workflow>')
    assert t.tag == "call-workflow"  # parsed without a separator error; the executor refuses it


def test_item17_ask_is_recognised_for_refusal():
    assert one('<ask next="T.md">prompt</ask>').tag == "ask"


def test_item18_print_is_not_a_transition():
    text = "<print>side channel output</print><goto>NEXT.md</goto>"
    assert one(text).target == "NEXT.md"
    assert extract_prints(text) == ["side channel output"]


def test_a_tag_inside_a_print_is_a_transition_as_in_raymond():
    """Raymond's parser reads the whole output for opening tags; `<print>` is not one of them, but what it holds is
    read like any other text (markdown.go parses the turn's text, script.go the whole stdout)."""
    text = "<print>side <goto>X.md</goto> note</print><goto>NEXT.md</goto>"
    assert [t.target for t in parse_transitions(text)] == ["X.md", "NEXT.md"]
    assert extract_prints(text) == ["side <goto>X.md</goto> note"]


@pytest.mark.parametrize("text,found", [
    # Every opening tag counts, its closing tag the first `</name>` after it (parsing.go), even in another's body.
    ("<result>done <goto>X</goto></result>", [("result", "", "done <goto>X</goto>"), ("goto", "X", "")]),
    ("<result>a <result>b</result> c</result>", [("result", "", "a <result>b"), ("result", "", "b")]),
    ('<ask next="N">Go to <goto>X</goto>?</ask>', [("ask", "N", "Go to <goto>X</goto>?"), ("goto", "X", "")]),
])
def test_a_tag_in_a_result_or_ask_body_is_a_transition_of_its_own(text, found):
    assert [(t.tag, t.target, t.payload) for t in parse_transitions(text)] == found


def test_a_tag_in_a_targets_body_makes_a_target_with_a_separator():
    """`<goto>A <reset>B</reset></goto>`: the goto's target is `A <reset>B</reset>`, which holds `/` (Raymond's
    "contains path separator" too)."""
    with pytest.raises(TagError, match="contains a path separator"):
        parse_transitions("<goto>A <reset>B</reset></goto>")


def test_item20_print_scanner_joins_split_chunks_and_holds_unfinished_ones():
    scanner = PrintScanner()
    assert scanner.feed("before <pri") == []
    assert scanner.feed("nt>hel") == []
    assert scanner.feed("lo</print> mid <print>two</print><print>open") == ["hello", "two"]
    assert scanner.feed(" still open") == []
    assert scanner.feed("</print>") == ["open still open"]


def test_design_word_boundary_after_the_tag_name():
    # Raymond's Go parser reads <gotox> as goto with attribute text "x"; wfexec requires a boundary.
    assert parse_transitions("<gotox>A.md</gotox>") == []
    assert parse_transitions("<resetting>A.md</resetting>") == []
    assert parse_transitions("<goto-x>A.md</goto-x>") == []
    assert one("<goto\n>A.md</goto>").target == "A.md"


def test_unclosed_opening_tag_is_skipped():
    assert one("<goto>never closed ... <result>ok</result>").tag == "result"


def test_target_is_trimmed_and_show_renders_the_tag():
    t = one('<call return="B">  A.md \n</call>')
    assert t.target == "A.md"
    assert t.show() == '<call return="B">A.md</call>'


# The tag pattern the scanner in wfexec.protocol.tags stands for: longer names first, so the alternation never
# stops at a prefix; a name followed by whitespace or `>`; the attribute text up to the first `>`.
_NAMES = sorted(TRANSITION_TAGS, key=len, reverse=True)
_TAG_PATTERN = re.compile(r"<(" + "|".join(re.escape(n) for n in _NAMES) + r")(?=[\s>])([^>]*)>")
_PIECES = st.one_of(st.sampled_from(["<", ">", "</", " ", "\n", "\u00a0", "\u2003", "x", "-", "=", '"', "é", "GOTO"]),
                    st.sampled_from([f"<{name}" for name in TRANSITION_TAGS]), st.sampled_from(TRANSITION_TAGS))


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=12))
def test_the_tag_scanner_finds_what_the_tag_pattern_finds(pieces):
    text = "".join(pieces)
    for position in range(len(text) + 1):
        match = _TAG_PATTERN.search(text, position)
        expected = None if match is None else (match.group(1), match.group(2), match.end())
        assert _next_opening(text, position) == expected, (text, position)


def test_tags_without_attributes_and_with_them():
    assert one("<result>ok</result>").attributes == {}
    assert one("<fork\u00a0next='A'>B</fork>").attributes == {"next": "A"}
