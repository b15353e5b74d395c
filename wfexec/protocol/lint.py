"""Raymond's lint checks over a states folder (`ray lint`, internal/lint), check for check.

What is read: each `.md` state's frontmatter and, when it has no `allowed_transitions`, the tags written in
its body; each script's text with `\\"` unescaped, for the tags it echoes (scripts decide at run time, so this
is what they *may* do). From that:

| check | severity | what |
|---|---|---|
| no-entry-point, ambiguous-entry-point | error | neither or both of 1_START and START |
| frontmatter-parse-error, invalid-model, invalid-effort | error | the frontmatter |
| missing-target, missing-return, missing-fork-next, ambiguous-state-resolution | error | targets |
| force-implicit-invalid, invalid-task-value, unsupported-task-attribute, missing-ask-next, unsupported-cd-attribute | error | tags and policies |
| fork-next-mismatch, unused-allowed-transition, unknown-field, unreachable-state, dead-end-state, call-without-result-path | warning | likely mistakes |

Raymond's two informational checks (implicit-transition, script-state-no-static-analysis) say nothing wrong
and are left out. Windows script states are not considered (this platform runs `.sh`).
"""

from __future__ import annotations

import os
import re
from collections import deque
from wfexec.records import dataclass

from wfexec.protocol.errors import ProtocolError
from wfexec.protocol.policy import Policy, PolicyError, implicit_entry, parse_frontmatter
from wfexec.protocol.scopes import MARKDOWN, StateScope, entry_point, extension
from wfexec.protocol.tags import WORKFLOW_TAGS, TagError, Transition, parse_transitions

ERROR, WARNING = "error", "warning"
_MODELS = ("opus", "sonnet", "haiku")
_EFFORTS = ("low", "medium", "high")
# A scope run on pi (its manifest's `backend: pi`) takes pi's model names as written, and pi's thinking levels.
_PI_EFFORTS = ("off", "minimal", "low", "medium", "high", "xhigh")
_TARGET_TAGS = ("goto", "reset", "call", "function", "fork")
_RETURN_TAGS = ("call", "function")
_NO_TASK_TAGS = ("goto", "call", "function", "result", "call-workflow", "function-workflow", "ask")
_SCRIPT = ".sh"


@dataclass(frozen=True)
class Finding:
    severity: str   # error | warning
    file: str       # the state file, or "" for the folder as a whole
    message: str
    check: str      # Raymond's name for the check
    line: int = 0   # where in the state file's text (1-based; 0: the file or folder as a whole)
    column: int = 0


@dataclass
class _Parsed:
    transitions: list
    policy: Policy | None
    frontmatter_error: str | None
    body: str
    text: str = ""  # the state file as written, to say where a finding is
    frontmatter_at: tuple | None = None  # (line, column) of the frontmatter's error, when known


def _position(text: str, offset: int) -> tuple[int, int]:
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _where(text: str, tag: str = "", value: str = "", key: str = "") -> tuple[int, int]:
    """Where a finding is written in a state file: the first `<tag ...>` holding `value` (a target or an
    attribute's value), else the first `<tag`, else the frontmatter's `key:`, else `value` itself (an
    allowed_transitions entry), else the first line."""
    if tag:
        first = None
        for match in re.finditer(rf"<{re.escape(tag)}\b", text):
            first = first if first is not None else match.start()
            end = text.find(f"</{tag}>", match.end())
            if not value or value in text[match.start():end if end >= 0 else len(text)]:
                return _position(text, match.start())
        if first is not None and not value:
            return _position(text, first)
    if key:
        at_key = re.search(rf"^[ \t-]*{re.escape(key)}[ \t]*:", text, re.M)
        if at_key:
            return _position(text, at_key.start() + len(at_key.group(0)) - len(at_key.group(0).lstrip(" \t-")))
    if value:
        at = text.find(value)
        if at >= 0:
            return _position(text, at)
    if tag:
        at_tag = re.search(rf"<{re.escape(tag)}\b", text)
        if at_tag:
            return _position(text, at_tag.start())
    return 1, 1


def _stem(name: str) -> str:
    return os.path.splitext(name)[0] if extension(name) else name


def _exists(target: str, files: set[str]) -> bool:
    """Raymond's targetExists: exact with an extension, else `.md` then the script extension."""
    if extension(target):
        return target in files
    return target + MARKDOWN in files or target + _SCRIPT in files


def _tags(text: str) -> list[Transition]:
    try:
        found = parse_transitions(text)
    except TagError:  # a malformed tag: Raymond's parser gives up on the whole text
        return []
    return [t for t in found if t.tag == "result" or "\n" not in t.target]


def _from_policy(policy: Policy) -> list[Transition]:
    out = []
    for entry in policy.allowed:
        tag = entry.get("tag")
        if not tag:
            continue
        target = str(entry.get("next" if tag == "ask" else "target") or "")
        if tag != "result" and not target:
            continue
        attributes = {k: str(v) for k, v in entry.items() if k not in ("tag", "target", "payload")}
        out.append(Transition(tag, target, attributes, str(entry.get("payload", ""))))
    return out


def _parse(scope: StateScope, name: str) -> _Parsed:
    text = scope.read_text(name)
    if extension(name) != MARKDOWN:
        return _Parsed(_tags(text.replace('\\"', '"')), None, None, "", text)
    try:
        policy, body = parse_frontmatter(text)
    except PolicyError as exc:
        return _Parsed(_tags(text), None, str(exc), "", text, (exc.line, exc.column) if exc.line else None)
    if policy is not None and policy.allowed:
        return _Parsed(_from_policy(policy), policy, None, body, text)
    return _Parsed(_tags(body), policy, None, body, text)


def state_transitions(scope: StateScope) -> dict[str, list[Transition]]:
    """For each `.md`/`.sh` state, the transitions it may take, as lint reads them (its policy, else the tags in
    its text)."""
    return {name: _parse(scope, name).transitions for name in sorted(scope.names())
            if extension(name) in (MARKDOWN, _SCRIPT)}


def lint_scope(scope: StateScope, start: str | None = None) -> list[Finding]:
    """Every finding for the states in `scope`, errors first, then by file and check (Raymond's order). With
    `start` (a states node's), that state is where runs begin and the entry point is not looked for."""
    files = sorted(n for n in scope.names() if extension(n) in (MARKDOWN, _SCRIPT))
    known = set(files)
    stems = {_stem(n) for n in files}
    # States of a Raymond YAML file or an inline mapping are named without their extension: `COUNT.md` there is
    # state COUNT whatever its kind, as the run resolves it (scopes.resolve_state).
    resolvable = known | {s + ext for s in stems for ext in (MARKDOWN, _SCRIPT)} if scope.strips_extensions \
        else known
    findings: list[Finding] = []

    def add(severity: str, file: str, message: str, check: str, tag: str = "", value: str = "",
            key: str = "", at: tuple | None = None) -> None:
        line, column = at or (_where(parsed[file].text, tag, value, key) if file in parsed else (0, 0))
        findings.append(Finding(severity, file, message, check, line, column))

    parsed: dict[str, _Parsed] = {}

    entry = _stem(start) if start else _entry_state(scope, add)
    parsed.update((name, _parse(scope, name)) for name in files)
    seen_ambiguous: set[str] = set()
    on_pi = _runs_on_pi(scope)
    for name in files:
        _file_checks(name, parsed[name], known, resolvable, seen_ambiguous, add, on_pi)
    _unknown_fields(scope, files, parsed, add)
    _graph_checks(files, parsed, stems, entry, add)
    order = {ERROR: 0, WARNING: 1}
    return sorted(findings, key=lambda f: (order[f.severity], f.file, f.check))


def _runs_on_pi(scope: StateScope) -> bool:
    from wfexec.protocol.scope_backends import declared_backend

    try:
        declared = declared_backend(scope)
    except ProtocolError:
        return False
    return declared is not None and declared[0] == "pi"


def _entry_state(scope: StateScope, add) -> str | None:
    try:
        return _stem(entry_point(scope))  # wfexec's rule: Raymond's, and a `start.md` in any letter case
    except ProtocolError as exc:
        if "ambiguous" in exc.message:
            add(ERROR, "", "ambiguous entry point: both 1_START and START exist; remove one", "ambiguous-entry-point")
        else:
            add(ERROR, "", "no entry point found: the workflow must contain 1_START or START (.md or .sh)",
                "no-entry-point")
        return None


def _computed(name: str, target: str) -> bool:
    """A script's target the shell computes when it runs (`<goto>$NEXT</goto>`): not known before, so not checked
    (a deliberate difference from `ray lint`, which calls it missing; `wfexec run` refuses what lint calls an
    error, and such a script runs)."""
    return extension(name) == _SCRIPT and ("$" in target or "`" in target)


def _file_checks(name: str, parsed: _Parsed, known: set[str], resolvable: set[str], seen_ambiguous: set[str],
                 add, on_pi: bool = False) -> None:
    policy, transitions = parsed.policy, parsed.transitions
    if parsed.frontmatter_error is not None:
        add(ERROR, name, f"invalid YAML frontmatter in {name}: {parsed.frontmatter_error}", "frontmatter-parse-error",
            at=parsed.frontmatter_at)
    if policy is not None and policy.model and policy.model not in _MODELS and not on_pi:
        add(ERROR, name, f"invalid model {policy.model!r} in {name}; must be one of: opus, sonnet, haiku",
            "invalid-model", key="model")
    if policy is not None and policy.effort and policy.effort not in (_PI_EFFORTS if on_pi else _EFFORTS):
        add(ERROR, name, f"invalid effort {policy.effort!r} in {name}; must be one of: low, medium, high",
            "invalid-effort", key="effort")
    for t in transitions:
        if t.tag in _TARGET_TAGS and not _exists(t.target, resolvable) and not _computed(name, t.target):
            add(ERROR, name, f"<{t.tag}> in {name} names '{t.target}', which is not a state of this workflow",
                "missing-target", t.tag, t.target)
        if t.tag == "ask":
            for key, value in (("next", t.target), ("timeout_next", t.attributes.get("timeout_next", ""))):
                if value and not _exists(value, resolvable) and not _computed(name, value):
                    add(ERROR, name, f"<ask> in {name} has {key}='{value}', which is not a state of this workflow",
                        "missing-target", "ask", value)
            if t.attributes.get("cd"):
                add(ERROR, name, f"<ask> in {name} does not support the `cd` attribute", "unsupported-cd-attribute",
                    "ask", "cd")
        if t.tag in _RETURN_TAGS:
            back = t.attributes.get("return", "")
            if not back:
                add(ERROR, name, f"<{t.tag}> in {name} is missing its `return` attribute", "missing-return", t.tag,
                    t.target)
            elif not _exists(back, resolvable) and not _computed(name, back):
                add(ERROR, name, f"<{t.tag}> in {name} has return='{back}', which is not a state of this workflow",
                    "missing-return", t.tag, back)
        task = t.attributes.get("task", "")
        if task and task not in ("new", "inherit"):
            add(ERROR, name, f'<{t.tag}> in {name} has task="{task}"; it must be "new" or "inherit"',
                "invalid-task-value", t.tag, task)
        if task and t.tag in _NO_TASK_TAGS:
            add(ERROR, name, f"<{t.tag}> in {name} does not support the `task` attribute", "unsupported-task-attribute",
                t.tag, task)
        elif task == "inherit" and t.tag in ("reset", "reset-workflow"):
            add(ERROR, name, f'<{t.tag}> in {name} does not support task="inherit"; a reset keeps its task folder',
                "unsupported-task-attribute", t.tag, task)
        if t.tag not in WORKFLOW_TAGS and t.target and not extension(t.target) and t.target not in seen_ambiguous \
                and t.target + MARKDOWN in known and t.target + _SCRIPT in known:
            seen_ambiguous.add(t.target)
            add(ERROR, name, f"ambiguous state '{t.target}': both {t.target}.md and {t.target}.sh exist; transitions "
                             f"to '{t.target}' without an extension fail", "ambiguous-state-resolution",
                t.tag, t.target)
    forks = [t for t in transitions if t.tag == "fork"]
    if forks and not any(t.attributes.get("next") for t in forks) and not any(t.tag == "goto" for t in transitions):
        add(ERROR, name, f"<fork> in {name} has no `next` and no <goto> beside it: the parent has nowhere to go on",
            "missing-fork-next", "fork")
    nexts = [t.attributes["next"] for t in forks if t.attributes.get("next")]
    if len(set(nexts)) > 1:
        other = next(v for v in nexts[1:] if v != nexts[0])
        add(WARNING, name, f"{name} has forks whose `next` differ: '{nexts[0]}' and '{other}'; all must agree",
            "fork-next-mismatch", "fork", other)
    if policy is not None and len(policy.allowed) > 1:
        for entry in policy.allowed:
            target = str(entry.get("target") or "")
            if entry.get("tag") not in ("result", "ask") and target and target not in parsed.body:
                add(WARNING, name, f"{name}: allowed_transitions lists '{target}', which the prompt never mentions",
                    "unused-allowed-transition", value=target)
    if policy is not None:
        if policy.force_implicit and implicit_entry(policy) is None:
            add(ERROR, name, f"{name} sets force_implicit, but its policy allows no implicit transition (it needs "
                             "exactly one allowed transition, neither <ask> nor a <result> without payload)",
                "force-implicit-invalid", key="force_implicit")
        for entry in policy.allowed:
            if entry.get("tag") == "ask" and not entry.get("next"):
                add(ERROR, name, f"allowed_transitions in {name} has an <ask> entry with no `next`", "missing-ask-next",
                    key="allowed_transitions")


def _unknown_fields(scope: StateScope, files: list[str], parsed: dict, add) -> None:
    from wfexec.protocol.yamlscope import state_unknown_fields

    if scope.kind == "YAML file":
        by_state = state_unknown_fields(scope.location)
        named = {_stem(n): n for n in files}
        for state, keys in by_state.items():
            file = named.get(state, state)
            for key in keys:
                add(WARNING, file, f"{file}: unrecognised field '{key}' (ignored when it runs)", "unknown-field")
        return
    for name in files:
        policy = parsed[name].policy
        for key in policy.unknown if policy is not None else ():
            add(WARNING, name, f"{name}: unrecognised field '{key}' (ignored when it runs)", "unknown-field",
                key=key)


def _graph_checks(files: list[str], parsed: dict, stems: set[str], entry: str | None, add) -> None:
    edges: dict[str, list[str]] = {}
    loops: dict[str, list[str]] = {}  # goto and reset only: where a callee can wander before its <result>
    with_result = set()
    for name in files:
        state = _stem(name)
        for t in parsed[name].transitions:
            if t.tag in WORKFLOW_TAGS:
                continue
            if t.tag == "result":
                with_result.add(state)
                continue
            followers = [t.target] + [t.attributes[k] for k in ("return", "next", "timeout_next")
                                      if t.attributes.get(k)]
            edges.setdefault(state, []).extend(_stem(f) for f in followers if f)
            if t.tag in ("goto", "reset") and t.target:
                loops.setdefault(state, []).append(_stem(t.target))
    if entry is not None:
        reachable = _reachable(entry, edges)
        for name in files:
            if _stem(name) not in reachable:
                add(WARNING, name, f"{name} is unreachable: no transition leads to it", "unreachable-state")
    for name in files:
        if extension(name) == MARKDOWN and not parsed[name].transitions:
            add(WARNING, name, f"{name} has no outgoing transitions; its agent cannot produce a valid one",
                "dead-end-state")
    for name in files:
        for t in parsed[name].transitions:
            if t.tag not in _RETURN_TAGS:
                continue
            callee = _stem(t.target)
            if callee in stems and not (_reachable(callee, loops) & with_result):
                add(WARNING, name, f"<{t.tag}> in {name} calls {callee}, but no state reachable from {callee} emits "
                                   "<result>: the call never returns", "call-without-result-path", t.tag, t.target)


def _reachable(start: str, edges: dict[str, list[str]]) -> set[str]:
    seen, queue = {start}, deque([start])
    while queue:
        for following in edges.get(queue.popleft(), ()):
            if following not in seen:
                seen.add(following)
                queue.append(following)
    return seen
