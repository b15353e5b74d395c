"""evaluate_keywords, parse_intent_flags and match_3vl_rules (seed scoring), run for real."""

from __future__ import annotations

import textwrap

import pytest

from wfexec.language.diagnostics import WorkflowError
from conftest import one_action


# --------------------------------------------------------------------------- #
# A gateway like the corpus one: mapping file → flags → rules → route.

MAPPING = """
    intent_flags:
      has_refresh:
        keywords: [refresh, update, sync]
        negative_keywords: ["don't refresh"]
        description: wants to bring a corpus up to date
      has_add:
        keywords: [add, include]
        negative_keywords: ["don't add", "do not add"]
      has_source:
        keywords: [source, repo]
      has_status:
        keywords: [status, check]
    intent_rules:
      - name: refresh_corpus
        conditions: {has_refresh: T}
        action: do_refresh
        priority: 80
      - name: refresh_source
        conditions: {has_refresh: T, has_source: T}
        action: do_refresh_source
        priority: 90
      - name: add_source
        conditions: {has_add: T, has_source: T, has_refresh: F}
        action: do_add
        priority: 70
      - name: show_status
        conditions: {has_status: T, has_add: F}
        action: do_status
        priority: 50
"""

GATEWAY = """
    name: gateway
    version: "1.0"
    start_node: detect
    imports:
      mapping: intent-mapping.yaml
    nodes:
      detect:
        type: action
        actions:
          - type: parse_intent_flags
            input: ${computed.user_input}
            flag_definitions: ${imports.mapping.intent_flags}
            store_as: computed.intent_flags
          - type: match_3vl_rules
            flags: ${computed.intent_flags}
            rules: ${imports.mapping.intent_rules}
            store_as: computed.intent_match
        on_success: decide
      decide:
        type: conditional
        condition:
          type: evaluate_expression
          expression: computed.intent_match.clear_winner
        branches:
          on_true: route
          on_false: ambiguous
      route:
        type: action
        actions:
          - type: dynamic_route
            action: ${computed.intent_match.winner.action}
        on_success: ${computed.dynamic_target}
      do_refresh: {type: action, actions: [{type: set_state, field: computed.did, value: refresh}], on_success: done}
      do_refresh_source: {type: action, actions: [{type: set_state, field: computed.did, value: refresh_source}], on_success: done}
      do_add: {type: action, actions: [{type: set_state, field: computed.did, value: add}], on_success: done}
      do_status: {type: action, actions: [{type: set_state, field: computed.did, value: status}], on_success: done}
    endings:
      done: {type: success, message: "did ${computed.did}"}
      ambiguous: {type: cancelled, message: "which one?"}
"""


@pytest.fixture
def gateway(run_yaml, tmp_path):
    (tmp_path / "intent-mapping.yaml").write_text(textwrap.dedent(MAPPING), encoding="utf-8")

    def run(user_input: str):
        return run_yaml(GATEWAY, overrides={"computed.user_input": user_input})[0]

    return run


@pytest.mark.parametrize("said, did", [
    ("please Refresh the react repo now", "refresh_source"),   # 4 vs 2; add_source excluded (refresh T vs F)
    ("add the vue source", "add"),                              # 5 (2 hard + 1 soft) vs 3
    ("check status, and don't add anything", "status"),         # 4 (F/F is hard too) vs 2
])
def test_gateway_routes_a_clear_winner(gateway, said, did):
    result = gateway(said)
    assert result.ending == "done"
    assert result.message == f"did {did}"


def test_gateway_flags_come_from_the_imported_mapping(gateway):
    result = gateway("Sync the repo, don't add it")
    assert result.state["computed"]["intent_flags"] == {
        "has_refresh": "T", "has_add": "F", "has_source": "T", "has_status": "U"}
    ranked = [(c["name"], c["score"]) for c in result.state["computed"]["intent_match"]["all_candidates"]]
    # add_source is excluded (has_add T vs F); show_status: U/T soft + F/F hard
    assert ranked == [("refresh_source", 4), ("show_status", 3), ("refresh_corpus", 2)]


def test_gateway_without_a_clear_winner_asks(gateway):
    result = gateway("refresh it")  # refresh_source 3 (T/T + U/T) vs refresh_corpus 2: less than 2 apart
    assert result.ending == "ambiguous"
    match = result.state["computed"]["intent_match"]
    assert match["clear_winner"] is False and match["winner"] is None
    # the two rules scoring 2 are ordered by priority (80, 50)
    assert [(c["name"], c["score"]) for c in match["top_candidates"]] == [
        ("refresh_source", 3), ("refresh_corpus", 2), ("show_status", 2)]


def test_gateway_with_no_keyword_at_all_has_no_winner(gateway):
    result = gateway("hello there")
    assert result.ending == "ambiguous"
    assert set(result.state["computed"]["intent_flags"].values()) == {"U"}


# --------------------------------------------------------------------------- #
# match_3vl_rules scoring

def match(run_yaml, flags, rules):
    result, _ = run_yaml(one_action({"type": "match_3vl_rules", "flags": flags, "rules": rules,
                                     "store_as": "computed.match"}))
    assert result.type == "success", result.message
    return result.state["computed"]["match"]


def scores(found):
    return [(c["name"], c["score"]) for c in found["all_candidates"]]


def test_hard_soft_and_unknown_conditions_score_2_1_0(run_yaml):
    found = match(run_yaml, {"a": "T", "b": "F", "c": "U"}, [
        {"name": "t_t", "conditions": {"a": "T"}},
        {"name": "f_f", "conditions": {"b": "F"}},
        {"name": "u_t", "conditions": {"c": "T"}},
        {"name": "t_u", "conditions": {"a": "U"}},
        {"name": "u_u", "conditions": {"c": "U"}},
        {"name": "missing_flag_is_u", "conditions": {"zzz": "F"}},
        {"name": "no_conditions"},
    ])
    assert scores(found) == [("t_t", 2), ("f_f", 2), ("u_t", 1), ("t_u", 1), ("missing_flag_is_u", 1),
                             ("u_u", 0), ("no_conditions", 0)]


def test_a_contradicted_condition_excludes_the_rule(run_yaml):
    found = match(run_yaml, {"a": "T", "b": "F"}, [
        {"name": "t_vs_f", "conditions": {"a": "F"}, "priority": 100},
        {"name": "f_vs_t", "conditions": {"a": "T", "b": "T"}},
        {"name": "kept", "conditions": {"a": "T"}, "action": "node_x"},
    ])
    assert scores(found) == [("kept", 2)]
    assert found["clear_winner"] is True  # the only candidate
    rule = {"name": "kept", "conditions": {"a": "T"}, "action": "node_x"}
    # The era's spec gives a candidate its `rule` (`top_candidates[0].rule.name`); its fields stay beside it.
    assert found["winner"] == {**rule, "rule": rule, "score": 2}
    assert found["top_candidates"][0]["rule"]["name"] == "kept"


def test_a_lead_of_two_is_a_clear_winner(run_yaml):
    found = match(run_yaml, {"a": "T", "b": "T"}, [
        {"name": "one", "conditions": {"a": "T"}, "priority": 99},
        {"name": "both", "conditions": {"a": "T", "b": "T"}},
    ])
    assert scores(found) == [("both", 4), ("one", 2)]
    assert found["clear_winner"] is True and found["winner"]["name"] == "both"


def test_a_lead_of_one_is_not_a_clear_winner(run_yaml):
    found = match(run_yaml, {"a": "T", "b": "U"}, [
        {"name": "one", "conditions": {"a": "T"}},
        {"name": "both", "conditions": {"a": "T", "b": "T"}},
    ])
    assert scores(found) == [("both", 3), ("one", 2)]
    assert found["clear_winner"] is False and found["winner"] is None


def test_priority_orders_ties_but_never_makes_a_winner(run_yaml):
    found = match(run_yaml, {"a": "T"}, [
        {"name": "low", "conditions": {"a": "T"}, "priority": 1},
        {"name": "high", "conditions": {"a": "T"}, "priority": 50},
        {"name": "none", "conditions": {"a": "T"}},
    ])
    assert [c["name"] for c in found["all_candidates"]] == ["high", "low", "none"]
    assert found["clear_winner"] is False and found["winner"] is None


def test_score_outranks_priority(run_yaml):
    found = match(run_yaml, {"a": "T", "b": "U"}, [
        {"name": "favourite", "conditions": {"a": "U"}, "priority": 1000},
        {"name": "better", "conditions": {"a": "T"}, "priority": 1},
    ])
    assert [c["name"] for c in found["all_candidates"]] == ["better", "favourite"]


def test_equal_ties_keep_the_order_of_the_rules(run_yaml):
    rules = [{"name": n, "conditions": {"a": "T"}} for n in ("c", "a", "b", "d")]
    found = match(run_yaml, {"a": "T"}, rules)
    assert [c["name"] for c in found["all_candidates"]] == ["c", "a", "b", "d"]
    assert [c["name"] for c in found["top_candidates"]] == ["c", "a", "b"]  # top 3 only


def test_all_unknown_flags_give_no_winner_even_with_a_lead(run_yaml):
    # The seed's +1 per soft condition would make `many` win 3 to 1; with no evidence there is no winner.
    found = match(run_yaml, {"a": "U", "b": "U", "c": "U"}, [
        {"name": "many", "conditions": {"a": "T", "b": "T", "c": "T"}},
        {"name": "few", "conditions": {"a": "T"}},
    ])
    assert scores(found) == [("many", 3), ("few", 1)]
    assert found["clear_winner"] is False and found["winner"] is None


def test_all_unknown_flags_with_a_single_rule_is_a_winner(run_yaml):
    found = match(run_yaml, {"a": "U"}, [{"name": "only", "conditions": {"a": "T"}}])
    assert found["clear_winner"] is True and found["winner"]["name"] == "only"


def test_every_rule_excluded_gives_no_candidates(run_yaml):
    found = match(run_yaml, {"a": "T"}, [{"name": "x", "conditions": {"a": "F"}}])
    assert found == {"clear_winner": False, "winner": None, "top_candidates": [], "all_candidates": []}


def test_booleans_and_null_are_read_as_t_f_u(run_yaml):
    found = match(run_yaml, {"a": True, "b": False, "c": None}, [
        {"name": "r", "conditions": {"a": "t", "b": False, "c": "T"}}])
    assert scores(found) == [("r", 5)]


@pytest.mark.parametrize("flags, rules, message", [
    ({"a": "maybe"}, [{"name": "r", "conditions": {"a": "T"}}], "flag `a` is 'maybe'"),
    ({"a": "T"}, [{"name": "r", "conditions": {"a": "yes"}}], "rule 'r' condition `a` is 'yes'"),
    ({"a": "T"}, [{"name": "r", "conditions": ["a"]}], "rule 'r': `conditions` must map"),
    ({"a": "T"}, [{"name": "r", "priority": "high"}], "rule 'r': `priority` must be a number"),
    ({"a": "T"}, ["r"], "rule 0 is a str"),
])
def test_malformed_flags_and_rules_fail_the_action(run_yaml, flags, rules, message):
    # Given through templates, as from an imported mapping: the shape is only known at run time.
    result, _ = run_yaml(one_action({"type": "match_3vl_rules", "flags": "${computed.f}", "rules": "${computed.r}",
                                     "store_as": "computed.match"},
                                    initial_state={"computed": {"f": flags, "r": rules}}))
    assert result.type == "failure"
    assert message in result.message


def test_rules_from_a_template_that_is_not_a_list_fail(run_yaml):
    result, _ = run_yaml(one_action({"type": "match_3vl_rules", "flags": {"a": "T"}, "rules": "${computed.r}",
                                     "store_as": "computed.match"}, initial_state={"computed": {"r": {"x": 1}}}))
    assert result.type == "failure"
    assert "`rules` must be a list, got dict" in result.message


# --------------------------------------------------------------------------- #
# parse_intent_flags

FLAGS = {"refresh": {"keywords": ["refresh", "update"]},
         "add": {"keywords": ["add"], "negative_keywords": ["don't add", "without adding"]},
         "status": {"keywords": ["status"], "description": "a description is ignored"}}


@pytest.mark.parametrize("said, expected", [
    ("REFRESH everything", {"refresh": "T", "add": "U", "status": "U"}),
    ("update and add", {"refresh": "T", "add": "T", "status": "U"}),
    ("Don't Add the repo, just status", {"refresh": "U", "add": "F", "status": "T"}),
    ("", {"refresh": "U", "add": "U", "status": "U"}),
])
def test_parse_intent_flags_gives_t_f_u(run_yaml, said, expected):
    result, _ = run_yaml(one_action({"type": "parse_intent_flags", "input": "${computed.said}",
                                     "flag_definitions": FLAGS, "store_as": "computed.flags_found"},
                                    initial_state={"computed": {"said": said}}))
    assert result.state["computed"]["flags_found"] == expected


def test_parse_intent_flags_rejects_definitions_that_are_not_a_mapping(run_yaml):
    result, _ = run_yaml(one_action({"type": "parse_intent_flags", "input": "x", "flag_definitions": "${computed.d}",
                                     "store_as": "computed.f"}, initial_state={"computed": {"d": ["refresh"]}}))
    assert result.type == "failure"
    assert "`flag_definitions` must be a mapping, got list" in result.message


def test_parse_intent_flags_rejects_a_flag_without_a_mapping(run_yaml):
    result, _ = run_yaml(one_action({"type": "parse_intent_flags", "input": "x",
                                     "flag_definitions": {"refresh": ["refresh"]}, "store_as": "computed.f"}))
    assert result.type == "failure"
    assert "flag_definitions.refresh" in result.message


# --------------------------------------------------------------------------- #
# evaluate_keywords

KEYWORD_SETS = {"refresh": ["refresh", "update"], "add": ["add", "new source"], "status": ["status"]}


@pytest.mark.parametrize("said, intent", [
    ("please UPDATE it", "refresh"),
    ("add a New Source and refresh", "refresh"),  # mapping order decides, not position in the text
    ("a new source please", "add"),
    ("what now?", None),
])
def test_evaluate_keywords_finds_the_first_intent_in_mapping_order(run_yaml, said, intent):
    result, _ = run_yaml(one_action({"type": "evaluate_keywords", "input": said, "keyword_sets": KEYWORD_SETS,
                                     "store_as": "computed.intent"}))
    assert result.type == "success"
    assert result.state["computed"]["intent"] == intent


def test_evaluate_keywords_reads_sets_from_an_import(run_yaml, tmp_path):
    (tmp_path / "keywords.yaml").write_text("sets:\n  ship: [deploy, release]\n  test: [pytest]\n")
    result, _ = run_yaml("""
        name: kw
        version: "1.0"
        start_node: act
        imports:
          kw: keywords.yaml
        nodes:
          act:
            type: action
            actions:
              - type: evaluate_keywords
                input: Cut a RELEASE
                keyword_sets: ${imports.kw.sets}
                store_as: computed.intent
            on_success: done
        endings:
          done: {type: success, message: "${computed.intent}"}
    """)
    assert result.message == "ship"


def test_evaluate_keywords_ignores_empty_keywords(run_yaml):
    result, _ = run_yaml(one_action({"type": "evaluate_keywords", "input": "anything",
                                     "keyword_sets": {"everything": [""], "any": "any"},
                                     "store_as": "computed.intent"}))
    assert result.state["computed"]["intent"] == "any"


def test_evaluate_keywords_with_a_non_list_set_fails(run_yaml):
    result, _ = run_yaml(one_action({"type": "evaluate_keywords", "input": "x", "keyword_sets": "${computed.k}",
                                     "store_as": "computed.intent"},
                                    initial_state={"computed": {"k": {"refresh": {"word": "x"}}}}))
    assert result.type == "failure"
    assert "keyword_sets.refresh must be a list of keywords" in result.message


def test_store_as_is_checked_at_load(run_yaml):
    with pytest.raises(WorkflowError):
        run_yaml(one_action({"type": "evaluate_keywords", "input": "x", "keyword_sets": {},
                             "store_as": "computed..bad"}))
