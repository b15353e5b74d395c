"""Frontmatter policy: checklist items 21–32 of reference/raymond-state-protocol.md §4.

All items are covered. Item 25's "cross-workflow tags" half does not apply: wfexec refuses those tags
before any policy check (test_protocol_tags.py, test_protocol_markdown.py).
"""

from __future__ import annotations

import pytest

from wfexec.protocol.policy import (PolicyError, check_transition, implicit_entry, implicit_transition,
                                    parse_frontmatter, reminder, render_entry, targets_match)
from wfexec.protocol.tags import Transition

FLOW = "---\nallowed_transitions: [{tag: goto, target: A.md}, {tag: result}]\n---\nbody\n"
BLOCK = "---\nallowed_transitions:\n  - tag: goto\n    target: A.md\n  - tag: result\n---\nbody\n"


def policy_of(*entries, **fields):
    import json

    front = {"allowed_transitions": list(entries), **fields}
    return parse_frontmatter(f"---\n{json.dumps(front)}\n---\nbody")[0]


def test_item21_flow_and_block_forms_agree_and_no_frontmatter_is_no_policy():
    flow, flow_body = parse_frontmatter(FLOW)
    block, block_body = parse_frontmatter(BLOCK)
    assert flow == block and flow_body == block_body == "body\n"
    assert flow.allowed == ({"tag": "goto", "target": "A.md"}, {"tag": "result"})
    assert parse_frontmatter("just a prompt\n---\nnot frontmatter\n") == (None, "just a prompt\n---\nnot frontmatter\n")
    assert parse_frontmatter("---\n---\nafter") == (None, "after")
    for empty in ("---\n \n---\nx", "---\nnull\n---\nx", "---\n{}\n---\nx"):
        assert parse_frontmatter(empty) == (None, "x")
    # The closing `---` must be followed by a newline; otherwise the file has no frontmatter.
    assert parse_frontmatter("---\nmodel: opus\n---")[0] is None


def test_item21_delimiter_lines_may_end_in_blanks_as_in_raymonds_pattern():
    """policy.go: `(?s)^---[ \\t]*\\n(.+?)\\n---[ \\t]*\\n`, else `^---[ \\t]*\\n---[ \\t]*\\n`."""
    policy, body = parse_frontmatter("--- \t\nmodel: opus\n---  \nbody\n")
    assert (policy.model, body) == ("opus", "body\n")
    assert parse_frontmatter("---\t\r\nmodel: opus\r\n--- \r\nbody")[0].model == "opus"
    assert parse_frontmatter("--- \n---\t\nafter") == (None, "after")
    for text in ("---\nmodel: opus\n--- x\nbody", "----\nmodel: opus\n---\nbody", " ---\nmodel: opus\n---\nb",
                 "---\n\n---\nbody"):  # the YAML is one character at least: a blank line is not empty frontmatter
        assert parse_frontmatter(text) == (None, text)
    # `---` right after `---` with a later `---` line: the YAML starts with a document marker, as Raymond reads it
    assert parse_frontmatter("---\n---\nmodel: opus\n---\nbody")[0].model == "opus"


def test_item22_malformed_yaml_is_an_error_and_entries_without_tag_are_dropped():
    with pytest.raises(PolicyError, match="invalid YAML frontmatter"):
        parse_frontmatter("---\nallowed_transitions: [unclosed\n---\nbody")
    # TestParseFrontmatterInvalidEntrySkipped: the entry without `tag` goes, the two others stay (a null one too).
    policy, _ = parse_frontmatter("---\nallowed_transitions:\n  - { tag: goto, target: NEXT.md }\n"
                                  "  - { target: MISSING_TAG.md }\n  - { tag: result }\n  -\n---\nbody")
    assert policy.allowed == ({"tag": "goto", "target": "NEXT.md"}, {"tag": "result"})


@pytest.mark.parametrize("front,line,message", [
    # Raymond decodes the entries into []map[string]string: yaml.v3 refuses a text, a number or a list there
    # ("cannot unmarshal !!str `goto` into map[string]string"), and a list or a mapping as an entry's value.
    ("allowed_transitions: [goto, {tag: result}]", 2, "entry 1 of `allowed_transitions` is the text 'goto', not a "
                                                      "mapping"),
    ("model: opus\nallowed_transitions:\n  - {tag: result}\n  - 3", 5, "entry 2 of `allowed_transitions` is the "
                                                                        "number 3"),
    ("allowed_transitions:\n  - [goto, X]", 3, "entry 1 of `allowed_transitions` is a list"),
    ("allowed_transitions:\n  - {tag: goto, target: [A, B]}", 3, "`target` of entry 1 of `allowed_transitions` is a "
                                                                  "list"),
    ("allowed_transitions: goto", 2, "`allowed_transitions` must be a list of entries, not the text 'goto'"),
    ("model: [opus]", 2, "`model` is a list"),
    ("force_implicit: maybe", 2, "`force_implicit` must be true or false, not the text 'maybe'"),
    ("force_implicit: 1", 2, "`force_implicit` must be true or false, not the number 1"),
])
def test_what_raymonds_decoder_refuses_is_an_error_at_the_state_files_line(front, line, message):
    with pytest.raises(PolicyError) as caught:
        parse_frontmatter(f"---\n{front}\n---\nbody")
    assert caught.value.line == line
    assert caught.value.message == f"invalid frontmatter (line {line}): {message}" or \
        caught.value.message.startswith(f"invalid frontmatter (line {line}): {message}"), caught.value.message


def test_the_text_form_of_an_entry_is_refused_with_the_mapping_to_write():
    with pytest.raises(PolicyError) as caught:
        parse_frontmatter("---\nallowed_transitions:\n  - result\n---\nbody")
    assert "`- {tag: result}`" in caught.value.hint
    with pytest.raises(PolicyError) as caught:
        parse_frontmatter("---\nallowed_transitions: [goto]\n---\nbody")
    assert "`- {tag: goto, target: NEXT}`" in caught.value.hint


def test_scalars_are_read_as_raymonds_decoder_reads_them():
    """A number or a boolean where text goes is its text (lint then says `5` is no model); `force_implicit` takes
    YAML 1.1's words, as yaml.v3 does for a bool field; a null `force_implicit` is false."""
    policy, _ = parse_frontmatter("---\nmodel: 5\neffort: true\nallowed_transitions: [{tag: result, payload: 42}]\n"
                                  "---\nx")
    assert (policy.model, policy.effort, policy.allowed) == ("5", "true", ({"tag": "result", "payload": "42"},))
    for word, value in (("yes", True), ("On", True), ("Y", True), ("no", False), ("OFF", False), ("n", False),
                        ('"yes"', True), ("", False), ("null", False)):
        assert parse_frontmatter(f"---\nmodel: opus\nforce_implicit: {word}\n---\nx")[0].force_implicit is value
    with pytest.raises(PolicyError, match="force_implicit"):
        parse_frontmatter('---\nforce_implicit: "true"\n---\nx')  # quoted: text, which yaml.v3 will not make a bool


def test_item23_crlf_and_model_normalisation():
    policy, body = parse_frontmatter('---\r\nmodel: " SONNET "\r\neffort: HIGH\r\n---\r\nhello\r\n')
    assert (policy.model, policy.effort, body) == ("sonnet", "high", "hello\n")


def test_item24_force_implicit_default_and_unknown_fields():
    policy, _ = parse_frontmatter("---\nmodel: opus\ncolour: blue\ntimeout: 5\n---\nbody")
    assert policy.force_implicit is False
    assert policy.unknown == ("colour", "timeout")  # timeout is a YAML-scope field, not frontmatter
    with pytest.raises(PolicyError, match="force_implicit"):
        parse_frontmatter("---\nforce_implicit: maybe\n---\nx")


def test_item25_no_policy_allows_every_tag():
    for policy in (None, parse_frontmatter("---\nmodel: opus\n---\nx")[0]):
        for tag in ("goto", "reset", "call", "function", "fork", "result"):
            assert check_transition(policy, Transition(tag, "A.md")) is None


def test_item26_wrong_tag_or_wrong_target_is_a_violation():
    policy = policy_of({"tag": "goto", "target": "A.md"})
    assert check_transition(policy, Transition("goto", "A.md")) is None
    assert 'tag "reset" is not allowed' in check_transition(policy, Transition("reset", "A.md"))
    assert "matches no allowed goto" in check_transition(policy, Transition("goto", "B.md"))


def test_item27_wrong_return_or_next_is_a_violation():
    policy = policy_of({"tag": "call", "target": "C.md", "return": "R.md"}, {"tag": "fork", "target": "W.md",
                                                                          "next": "N.md"})
    assert check_transition(policy, Transition("call", "C.md", {"return": "R.md"})) is None
    assert check_transition(policy, Transition("call", "C.md", {"return": "OTHER.md"}))
    assert check_transition(policy, Transition("call", "C.md", {}))  # missing return
    assert check_transition(policy, Transition("fork", "W.md", {"next": "N.md", "item": "x"})) is None
    assert check_transition(policy, Transition("fork", "W.md", {"next": "ELSE.md"}))


def test_item28_result_payloads():
    any_payload = policy_of({"tag": "result"})
    assert check_transition(any_payload, Transition("result", payload="whatever")) is None
    fixed = policy_of({"tag": "result", "payload": "YES"}, {"tag": "result", "payload": "NO"})
    assert check_transition(fixed, Transition("result", payload="\nYES\n")) is None
    assert check_transition(fixed, Transition("result", payload="NO")) is None
    assert check_transition(fixed, Transition("result", payload="MAYBE"))


@pytest.mark.parametrize("allowed,actual,expected", [
    ("COUNT", "COUNT.md", True), ("COUNT", "COUNT.sh", True), ("COUNT", "COUNT.bat", True),
    ("COUNT", "COUNT.MD", True), ("COUNT.md", "COUNT.md", True), ("COUNT.md", "COUNT.sh", False),
    ("count", "COUNT.md", False), ("COUNT", "COUNT.txt", False), ("COUNT", "COUNTER.md", False),
])
def test_item29_targets_match(allowed, actual, expected):
    assert targets_match(allowed, actual) is expected


def test_item30_call_entry_does_not_allow_call_workflow():
    policy = policy_of({"tag": "call"}, {"tag": "fork"})
    assert check_transition(policy, Transition("call-workflow", "x/y")) == \
        'tag "call-workflow" is not allowed (allowed tags: call, fork)'
    assert check_transition(policy, Transition("fork-workflow", "x/y")) == \
        'tag "fork-workflow" is not allowed (allowed tags: call, fork)'
    assert check_transition(policy, Transition("call", "x")) is None  # the entry allows its own tag


def test_item31_implicit_eligibility():
    for entry in ({"tag": "goto", "target": "N.md"}, {"tag": "call", "target": "C.md", "return": "R.md"},
                  {"tag": "function", "target": "F.md", "return": "R.md"},
                  {"tag": "fork", "target": "W.md", "next": "N.md"}, {"tag": "result", "payload": "DONE"}):
        assert implicit_entry(policy_of(entry)) == entry
    for entries in (({"tag": "result"},), ({"tag": "goto", "target": "A"}, {"tag": "goto", "target": "B"}),
                    ({"tag": "ask", "next": "N"},), ({"tag": "goto"},)):
        assert implicit_entry(policy_of(*entries)) is None
    assert implicit_entry(None) is None
    # Extra keys of an implicit entry become attributes of the transition.
    t = implicit_transition({"tag": "fork", "target": "W.md", "next": "N.md", "item": "x"})
    assert (t.tag, t.target, t.attributes) == ("fork", "W.md", {"next": "N.md", "item": "x"})
    # Read as written (Raymond's parser does too): the state runs without it, and lint's force-implicit-invalid
    # reports it (test_protocol_lint.py).
    policy, _ = parse_frontmatter('---\n{"allowed_transitions": [{"tag": "result"}], "force_implicit": true}\n---\nx')
    assert policy.force_implicit and implicit_entry(policy) is None


def test_item32_reminder_text():
    policy = policy_of({"tag": "goto", "target": "NEXT.md"}, {"tag": "result"},
                       {"tag": "call", "target": "C.md", "return": 'say "hi"'})
    assert reminder(policy) == ("\n---\nREMINDER: Emit exactly one of these tags (target names are literal, "
                                "not placeholders):\n\n1. <goto>NEXT.md</goto>\n2. <result>...</result>\n"
                                "3. <call return='say \"hi\"'>C.md</call>\n\nEmit exactly one of the above tags.\n---")
    assert render_entry({"tag": "result", "payload": "YES"}) == "<result>YES</result>"
    assert render_entry({"tag": "ask", "next": "N.md"}) == '<ask next="N.md">[human-facing prompt here]</ask>'
    assert render_entry({"tag": "goto"}) == "<goto>TARGET</goto>"
