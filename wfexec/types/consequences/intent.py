"""Intent detection: keyword sets and the seed's three-valued (3VL) flags and rules.

Every function here is deterministic: the same input always gives the same
flags, the same candidates in the same order, the same winner. The values
usually come from an intent-mapping file loaded with the workflow's
`imports:` (`${imports.mapping.intent_flags}`, `${imports.mapping.intent_rules}`).
"""

from __future__ import annotations

from typing import Any

from wfexec.language.expressions import to_text
from wfexec.types.registry import ActionFailed, TypeList

TYPES = TypeList()

STORE_AS = {"type": "string", "description": "the state path to store the result at, e.g. computed.intent"}
TRUE, FALSE, UNKNOWN = "T", "F", "U"
HARD, SOFT = 2, 1
TOP_CANDIDATES = 3


def _text(value: Any) -> str:
    return to_text(value).casefold()


def _keywords(value: Any, where: str) -> list[str]:
    """A list of keywords (a single string counts as one); empty keywords are dropped, they would match anything."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise ActionFailed(f"{where} must be a list of keywords, got {type(value).__name__}")
    return [_text(k) for k in value if to_text(k).strip()]


def _mapping(value: Any, name: str, hint: str) -> dict:
    if not isinstance(value, dict):
        got = "null" if value is None else type(value).__name__
        raise ActionFailed(f"`{name}` must be a mapping, got {got}", hint)
    return value


def _mentions(text: str, keywords: list[str]) -> bool:
    return any(keyword in text for keyword in keywords)


# --------------------------------------------------------------------------- #
@TYPES.consequence("evaluate_keywords",
                   {"input": {"type": "string"},
                    "keyword_sets": {"type": "object", "additionalProperties": {"type": ["array", "string"]},
                                     "description": "intent → keywords, tried in order"},
                    "store_as": STORE_AS},
                   ["input", "keyword_sets", "store_as"], paths=("store_as",))
def evaluate_keywords(params, ctx):
    """Store the first intent with a keyword found in `input` (case-insensitive), else null."""
    keyword_sets = _mapping(params["keyword_sets"], "keyword_sets", "write it as `{intent: [keyword, ...]}`")
    text = _text(params["input"])
    found = None
    for intent, keywords in keyword_sets.items():
        if _mentions(text, _keywords(keywords, f"keyword_sets.{intent}")):
            found = intent
            break
    ctx.set(params["store_as"], found)
    ctx.trace(f"keywords matched intent: {found}")


# --------------------------------------------------------------------------- #
@TYPES.consequence("parse_intent_flags",
                   {"input": {"type": "string"},
                    "flag_definitions": {"type": "object",
                                         "description": "flag → {keywords[], negative_keywords[]?, description?}"},
                    "store_as": STORE_AS},
                   ["input", "flag_definitions", "store_as"], paths=("store_as",))
def parse_intent_flags(params, ctx):
    """Store flag → "T"/"F"/"U": a negative keyword in `input` gives F, else a keyword gives T, else U."""
    definitions = _mapping(params["flag_definitions"], "flag_definitions",
                           "write it as `{flag: {keywords: [...], negative_keywords: [...]}}`, "
                           "e.g. ${imports.mapping.intent_flags}")
    text = _text(params["input"])
    flags = {}
    for flag, definition in definitions.items():
        definition = _mapping(definition, f"flag_definitions.{flag}", "give the flag `keywords: [...]`")
        if _mentions(text, _keywords(definition.get("negative_keywords"), f"{flag}.negative_keywords")):
            flags[flag] = FALSE
        elif _mentions(text, _keywords(definition.get("keywords"), f"{flag}.keywords")):
            flags[flag] = TRUE
        else:
            flags[flag] = UNKNOWN
    ctx.set(params["store_as"], flags)
    ctx.trace("intent flags: " + (" ".join(f"{k}={v}" for k, v in flags.items()) or "(none)"))


# --------------------------------------------------------------------------- #
_TRUTH = {"t": TRUE, "true": TRUE, "f": FALSE, "false": FALSE, "u": UNKNOWN, "unknown": UNKNOWN}


def _truth(value: Any, where: str) -> str:
    """T, F or U; booleans and null are accepted as T, F and U."""
    if value is True:
        return TRUE
    if value is False:
        return FALSE
    if value is None:
        return UNKNOWN
    state = _TRUTH.get(str(value).strip().lower())
    if state is None:
        raise ActionFailed(f"{where} is {value!r}; a three-valued flag is T, F or U")
    return state


def score_rule(conditions: dict, flags: dict) -> int | None:
    """The seed score of one rule against the flags, or None when a condition contradicts a flag.

    Per condition (rule / state): T/T or F/F +2; one side U and the other T or F +1;
    U/U 0; T/F or F/T excludes the rule. A flag the state does not have is U.
    """
    score = 0
    for flag, wanted in conditions.items():
        state = flags.get(flag, UNKNOWN)
        if wanted == state:
            score += 0 if wanted == UNKNOWN else HARD
        elif UNKNOWN in (wanted, state):
            score += SOFT
        else:
            return None
    return score


def _rule(value: Any, index: int) -> tuple[dict, dict, float]:
    """A rule checked and normalised: (rule as given, its conditions as T/F/U, its priority)."""
    if not isinstance(value, dict):
        raise ActionFailed(f"rule {index} is a {type(value).__name__}; a rule is a mapping "
                           "{name, conditions, action, priority?}")
    name = value.get("name", f"#{index}")
    conditions = value.get("conditions") or {}
    if not isinstance(conditions, dict):
        raise ActionFailed(f"rule '{name}': `conditions` must map flags to T, F or U")
    priority = value.get("priority", 0)
    if priority is None:
        priority = 0
    if isinstance(priority, bool) or not isinstance(priority, (int, float)):
        raise ActionFailed(f"rule '{name}': `priority` must be a number, got {priority!r}")
    normalised = {flag: _truth(state, f"rule '{name}' condition `{flag}`") for flag, state in conditions.items()}
    return value, normalised, priority


def rank_rules(flags: dict, rules: list) -> dict:
    """Score, sort and pick: the result stored by match_3vl_rules (see its docstring)."""
    candidates = []
    for index, raw in enumerate(rules):
        rule, conditions, priority = _rule(raw, index)
        score = score_rule(conditions, flags)
        if score is not None:
            # The era's spec gives each candidate its `rule` (`top_candidates[0].rule.name`); the rule's own
            # fields stay beside it too, so `candidate.action` reads the same rule.
            candidates.append(({**rule, "rule": rule, "score": score}, priority))
    # sorted() is stable: rules that tie on score and priority keep the mapping's order.
    candidates.sort(key=lambda pair: (-pair[0]["score"], -pair[1]))
    ranked = [candidate for candidate, _ in candidates]
    clear = _clear_winner(ranked, flags)
    return {"clear_winner": clear, "winner": ranked[0] if clear else None,
            "top_candidates": ranked[:TOP_CANDIDATES], "all_candidates": ranked}


def rank_rules_v8(flags: dict, rules: list) -> dict:
    """Blueprint-lib's ranking (v2.1 on, and what v8's catalogue states): a rule's U is a wildcard; per other
    condition a flag that agrees is a hard match, a U flag a soft match, and one that disagrees excludes the rule.
    Candidates sort by (hard desc, soft asc, conditions asc), keeping the order of `rules` on a tie; the winner is
    clear when no other candidate has the top candidate's three numbers."""
    candidates = []
    for index, raw in enumerate(rules):
        rule, conditions, _ = _rule(raw, index)
        hard = soft = effective = 0
        for flag, wanted in conditions.items():
            if wanted == UNKNOWN:
                continue
            effective += 1
            state = flags.get(flag, UNKNOWN)
            if state == wanted:
                hard += 1
            elif state == UNKNOWN:
                soft += 1
            else:
                break
        else:
            # The rule's own fields stay beside `rule` (blueprint-lib's shape, read as `selected.rule.action`),
            # so `candidate.action` reads the same rule.
            candidates.append({**rule, "rule": rule, "hard_matches": hard, "soft_matches": soft,
                               "effective_conditions": effective, "score": hard, "condition_count": effective})
    rank = lambda c: (-c["hard_matches"], c["soft_matches"], c["effective_conditions"])  # noqa: E731
    candidates.sort(key=rank)
    tied = [c for c in candidates if rank(c) == rank(candidates[0])] if candidates else []
    clear = len(tied) == 1
    return {"clear_winner": clear, "winner": candidates[0]["rule"] if clear else None,
            "tied_candidates": [] if clear else tied, "top_candidates": candidates[:TOP_CANDIDATES],
            "all_candidates": candidates}


def _clear_winner(ranked: list, flags: dict) -> bool:
    if len(ranked) == 1:
        return True
    if len(ranked) < 2 or all(state == UNKNOWN for state in flags.values()):
        return False
    return ranked[0]["score"] >= ranked[1]["score"] + HARD


@TYPES.consequence("match_3vl_rules",
                   {"flags": {"type": "object", "description": "flag → T|F|U, e.g. from parse_intent_flags"},
                    "rules": {"type": "array", "items": {"type": "object"},
                              "description": "[{name, conditions: {flag: T|F|U}, action, priority?}]"},
                    "store_as": STORE_AS,
                    "ranking": {"enum": ["seed", "blueprint"],
                                "description": "seed (default; blueprint-lib v8 files: blueprint): how candidates "
                                               "score and which one wins"}},
                   ["flags", "rules", "store_as"], paths=("store_as",), era_params={"v8": {"ranking": "blueprint"}})
def match_3vl_rules(params, ctx):
    """Score intent rules against T/F/U flags (seed scoring); store the clear winner and the ranking.

    Scoring (seed, exactly): each rule condition is compared with the flag's
    state, a flag absent from `flags` being U. T/T or F/F scores +2, a U
    against T or F scores +1, U/U scores 0, and T against F excludes the rule.
    Every rule not excluded is a candidate, a score of 0 included. Candidates
    are sorted by score, then priority (default 0), both descending; equal
    pairs keep the order of `rules`.

    Clear winner: exactly one candidate, or the top score is at least the
    second score + 2. Priority orders candidates but never makes a winner.
    One reading added to the seed: when no flag is T or F (no evidence at all),
    soft +1s alone would crown the rule with the most conditions, so there is
    no clear winner then unless exactly one candidate remains.

    Stored at `store_as`: {clear_winner, winner (the top candidate, or null
    unless clear_winner), top_candidates (the first 3), all_candidates}; each
    candidate is the rule's fields plus `rule` (the rule as written, the
    spec's `candidate.rule.name`) and its `score`.

    With `ranking: blueprint` (the default in a v8 file), blueprint-lib's own ranking (v8's catalogue states it): a rule's U is a wildcard;
    a flag that agrees is a hard match, a U flag a soft one, one that disagrees excludes the rule; candidates
    sort by hard matches (more first), soft matches, then conditions (fewer first); the winner (the rule) is
    clear when no other candidate ties with it on all three. Each candidate is the rule's fields plus `rule`,
    `hard_matches`, `soft_matches`, `effective_conditions`, `score` (= hard) and `condition_count`; the
    result adds `tied_candidates`.
    """
    flags = _mapping(params["flags"], "flags", "give the mapping stored by parse_intent_flags, "
                     "e.g. ${computed.intent_flags}")
    flags = {flag: _truth(state, f"flag `{flag}`") for flag, state in flags.items()}
    rules = params["rules"]
    if not isinstance(rules, list):
        raise ActionFailed(f"`rules` must be a list, got {type(rules).__name__}",
                           "e.g. rules: ${imports.mapping.intent_rules}")
    result = (rank_rules_v8 if params.get("ranking") == "blueprint" else rank_rules)(flags, rules)
    ctx.set(params["store_as"], result)
    top = ", ".join(f"{c.get('name')}={c['score']}" for c in result["top_candidates"]) or "no candidates"
    ctx.trace(f"3VL rules: {top}; clear winner: {result['winner'].get('name') if result['winner'] else 'none'}")
