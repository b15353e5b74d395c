"""`--dry-run`: run what only reads and changes the run's state; describe the rest, and stand in for its results.

A call whose type declares an outside effect (files, process, network, git, mcp) is
not run: it prints what it would do ("would write release/NOTES.md") and each
state path it may write gets a marked placeholder, `<dry-run: computed.sha>`
(written_paths). A state-only call that reads a placeholder stores placeholders
in turn (its real result cannot be known); one that stores nothing (a message)
runs with what it reads shown as placeholders. A condition, a question's options
or a computed route that reads one cannot be decided: the run stops there
(exit 4), naming the node and the value. Text (a question, an ending) shows each
`${...}` that reads one as a placeholder (DryRun.render). LLM steps print their
prompt instead of sending it (Run.judge); what they would store gets
placeholders, and a condition the LLM decides stops the run after its prompt.

What a call reads is found from its expressions' names, resolved as the run
resolves them, and the state paths its parameters name (read_by), never from its
text.
"""

from __future__ import annotations

import re
from typing import Any

from wfexec.language.expressions import MISSING, Expression, ExpressionError, KeyTemplates, Template, to_text
from wfexec.language.model import Call, describe_call
from wfexec.language.paths import PathError, StatePath, format_path, parse_path
from wfexec.types.registry import PRECONDITION, ActionFailed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Mapping, NoReturn

    from wfexec.running.engine import Run

# Effects a dry run never lets happen. `llm` is the backend's (the prompt is printed, not sent); `display` prints.
OUTSIDE_EFFECTS = frozenset({"files", "process", "network", "git", "mcp"})
# A call that asks the LLM: its prompt is printed, its result a placeholder; as a condition, it cannot be decided.
LLM_EFFECT = "llm"
# Reading files is no change: a check with only this effect runs for real.
READ_ONLY_CHECK_EFFECTS = frozenset({"files"})
# A placeholder, wherever it stands in a value.
_MARK = re.compile(r"<dry-run: (.+?)>")
# Path parameters a consequence reads (`cache_web_content from:`), not writes.
_READ_PATHS = frozenset({"from"})
# Parameters listing state paths a consequence may set (`inline`'s `state_writes`).
_LIST_TARGETS = ("state_writes",)
# Parameters naming a flag a consequence sets: `flags.<name>`.
_FLAG_TARGETS = ("set_flag", "flag")
# The run log (`init_log` writes it): the log types add to it without naming it, so a placeholder there would make
# them fail where the real run's would not. A dry run's log is the one they make without `init_log`.
_KEPT_BY_THE_LOG_TYPES = frozenset({"log"})


def placeholder(path: str) -> str:
    return f"<dry-run: {path}>"


class DryRun:
    """The placeholders of one dry run: state path as written → what would have produced it."""

    def __init__(self):
        self.placeholders: dict[str, str] = {}

    def read_by(self, run, call: Call, scope) -> str | None:
        """The first placeholder `call` reads, by the path it was stored at, else None: what its own parameters'
        expressions read (not those of calls nested in it: each is asked when it runs), and the state its path
        parameters name (a condition's `field:` and `flag:`; a step's target when it changes the value there, or
        when a placeholder stands above it)."""
        if not self.placeholders:
            return None
        for value in call.params.values():
            found = self.reads(value, scope)
            if found is not None:
                return found
        for path, mode in _named_paths(call, self.rendered(call, scope) or call.params):
            found = _placeholder_on(run.state, path, mode)
            if found is not None:
                return found
        return None

    def reads(self, value: Any, scope) -> str | None:
        """The first placeholder a compiled value reads: the names its expressions and templates read (each only as
        deep as it reads it: `computed.a` reads no placeholder at `computed.b`), the state a prose field names.
        Calls nested in it are not looked into."""
        if not self.placeholders:
            return None
        cls = value.__class__
        if cls is Expression:
            return _expression_reads(value, scope)
        if cls is Template:
            for expression in value.expressions:
                found = _expression_reads(expression, scope)
                if found is not None:
                    return found
            return None
        if cls is str or value is None or isinstance(value, (Call, bool, int, float)):
            return None
        if isinstance(value, dict):
            items = list(value.values())
            if isinstance(value, KeyTemplates):
                items += list(value.templates.values())
        elif isinstance(value, (list, tuple)):
            items = list(value)
        else:
            from wfexec.language.prose import Prose

            if isinstance(value, Prose):
                from wfexec.running.prose import named_values

                return placeholder_in(named_values(value, scope))
            return None
        for item in items:
            found = self.reads(item, scope)
            if found is not None:
                return found
        return None

    def skip(self, run, call: Call, scope) -> bool:
        """Apply `call` the dry way when it must not run: True when it was handled (not run)."""
        outside = set(call.spec.effects) & OUTSIDE_EFFECTS
        read = self.read_by(run, call, scope)
        llm = LLM_EFFECT in call.spec.effects and not outside
        if not outside and read is None and not llm:
            return False
        values = self.rendered(call, scope)
        targets = written_paths(call, values, lambda nested: self.rendered(nested, scope))
        if llm and read is None:
            # Its prompt is printed, not sent (Run.judge): what it would store is the LLM's, so a placeholder.
            self._run_shown(run, call, values if values is not None else call.params, scope, "the LLM's reply")
            what = f"{call.type}: the LLM's reply (not asked in a dry run)"
        elif outside:
            run.io.print(f"would {describe_call(call, values)}")
            what = describe_call(call, values)
        elif not targets and values is not None and not any(_nested_calls(call)):
            # It writes no result (a message, a log record): it runs, saying what it can (`<dry-run: ...>` parts).
            self._run_shown(run, call, values, scope, read)
            return True
        else:
            what = f"{call.type}, from {read} (not computed in a dry run)"
            run.io.trace(f"  dry run: {call.type} reads {read}; its result is a placeholder")
        for path in targets:
            self.put(run, path, what)
        return True

    def _run_shown(self, run, call: Call, values: Mapping[str, Any], scope, read: str | None) -> Any:
        """Run a call with its parameters rendered the dry way: one that stores no result (a message shows its
        placeholders), or one that asks the LLM (its prompt is printed; what it stores is replaced by placeholders).
        One that cannot run so (a table whose rows are a placeholder, a reply the dry run did not get) is left out,
        as a step that would fail only in a dry run must be."""
        from wfexec.running.context import CallContext

        try:
            return call.spec.handler(values, CallContext(run, call, scope))
        except (ActionFailed, ExpressionError, PathError) as exc:
            run.io.trace(f"  dry run: {call.type} needs {read} and cannot run without it ({exc}); left out")
            return None

    def stand_in(self, run, paths, what: str) -> str:
        """Placeholders at `paths` (texts) for what a judgement step would have stored; the placeholder of its
        reply itself, named by `what`."""
        for text in paths:
            for path in _parsed(text):
                self.put(run, path, what)
        self.placeholders[what] = "the LLM (not asked in a dry run)"
        return placeholder(what)

    def put(self, run, path: StatePath, what: str) -> None:
        """A placeholder at `path`, for what would have written it; none under one already there (it stands for
        all of that value), nor where state cannot hold one."""
        value = run.state
        for part in path[:-1]:
            if isinstance(value, str) and _MARK.search(value):
                return
            value = value.get(part) if isinstance(value, dict) else None
            if value is None:
                break
        if isinstance(value, str) and _MARK.search(value):
            return
        shown = format_path(path)
        try:
            run.write(path, placeholder(shown))
        except PathError:
            return
        self.placeholders[shown] = what

    def check_allowed(self, run, call: Call, scope) -> None:
        """Stop the run (exit 4) when a condition cannot be decided without a real effect or result."""
        read = self.read_by(run, call, scope)
        if read is not None:
            self.undecided(run, call.describe(), read)
        outside = set(call.spec.effects) & OUTSIDE_EFFECTS - READ_ONLY_CHECK_EFFECTS
        if outside:
            run.stop(run.current, f"dry run stops here: deciding {call.describe()} would "
                     f"{'/'.join(sorted(outside))} for real", "run it for real to go further")
        if LLM_EFFECT in call.spec.effects:  # a judgement: its prompt is printed, then it cannot be decided
            self._run_shown(run, call, self.rendered(call, scope) or call.params, scope, "the LLM's answer")
            run.stop(run.current, f"dry run stops here: deciding {call.describe()} needs the LLM's answer, which a "
                     "dry run does not ask (its prompt is above)", "run it for real to go further")

    def render(self, value: Any, scope) -> Any:
        """A compiled value rendered as the run renders it (a bare expression evaluated), but each `${...}` that reads
        a placeholder stands as one, named by its source (`<dry-run: computed.page.content.length>`): what a
        message, a question or an ending says of a value the dry run did not compute."""
        cls = value.__class__
        if cls is Template:
            if value.whole:
                return self._evaluated(value.parts[0], scope)
            text = ""
            for part in value.parts:
                text += part if part.__class__ is str else to_text(self._evaluated(part, scope))
            return text
        if cls is Expression:
            return self._evaluated(value, scope)
        if cls is KeyTemplates:
            return {to_text(self.render(value.templates.get(k, k), scope)): self.render(v, scope)
                    for k, v in value.items()}
        if isinstance(value, dict):
            return {k: self.render(v, scope) for k, v in value.items()}
        if isinstance(value, list):
            return [self.render(v, scope) for v in value]
        return value

    def _evaluated(self, expression: Expression, scope) -> Any:
        if self.placeholders and _expression_reads(expression, scope) is not None:
            return placeholder(" ".join(expression.source.split()))
        return expression.evaluate(scope)

    def rendered(self, call: Call, scope) -> dict[str, Any] | None:
        """The call's parameters, rendered the dry way; None when an expression fails on real values."""
        params = dict(call.params)
        try:
            for name in call.dynamic:
                params[name] = self.render(params[name], scope)
        except ExpressionError:
            return None
        return params

    def deciding(self, run, what: str, value: Any = None, path: StatePath | None = None) -> None:
        """Stop the run (exit 4) when `value`, or the state at `path` or above it, holds a placeholder: `what` is
        decided by it."""
        found = placeholder_in(value)
        if found is None and path is not None:
            found = _placeholder_on(run.state, path, _READ)
        if found is not None:
            self.undecided(run, what, found)

    def undecided(self, run: Run, what: str, read: str) -> NoReturn:
        """Stop the run (exit 4): `what` needs the real value of the placeholder at `read`."""
        source = self.placeholders.get(read)
        run.stop(run.current, f"dry run stops here: {what} needs the real value of {read}, which the dry run did "
                 f"not compute" + (f" (it would come from: {source})" if source else ""),
                 "the steps before it ran dry; run it for real to go further")


def written_paths(call: Call, values: Mapping[str, Any] | None,
                  render: Callable[[Call], Mapping[str, Any] | None]) -> list[StatePath]:
    """Every state path a consequence may write, its parameters as rendered (`values`; None: they could not be):
    the paths its path parameters name (but `from`, which it reads), the flags it sets (`set_flag`, `flag`), the
    paths its type always writes (TypeSpec.writes, but the run log), and those of the calls nested in it (a
    `foreach`'s actions, each rendered by `render`, None when it cannot be without the loop's names)."""
    found: list[StatePath] = []
    if values is not None:
        for name in call.spec.paths:
            if name not in _READ_PATHS:
                found.extend(_parsed(values.get(name)))
        for name in _FLAG_TARGETS:
            flag = _parsed(values.get(name))
            found.extend(("flags",) + parts for parts in flag)
    if values is not None:
        for name in _LIST_TARGETS:
            for text in values.get(name) or ():
                found.extend(_parsed(text))
    for text in call.spec.writes:
        if text not in _KEPT_BY_THE_LOG_TYPES:
            found.extend(_parsed(text))
    for nested in _nested_calls(call):
        found.extend(written_paths(nested, render(nested), render))
    return list(dict.fromkeys(found))


def _nested_calls(call: Call):
    for value in call.params.values():
        for nested in (value if isinstance(value, tuple) else (value,)):
            if isinstance(nested, Call):
                yield nested


def _parsed(text: Any) -> list[StatePath]:
    """The state path `text` names, in a list; none when it is not one."""
    if not isinstance(text, str) or not text:
        return []
    try:
        return [parse_path(text)]
    except PathError:
        return []


def placeholder_in(value: Any) -> str | None:
    """The path of the first placeholder in a state value (one, or a list or mapping holding one), else None."""
    cls = value.__class__
    if cls is str:
        if "<dry-run: " not in value:
            return None
        match = _MARK.search(value)
        return match.group(1) if match else None
    if cls is dict or isinstance(value, dict):
        value = value.values()
    elif not isinstance(value, (list, tuple)):
        return None
    for item in value:
        found = placeholder_in(item)
        if found is not None:
            return found
    return None


def _expression_reads(expression: Expression, scope) -> str | None:
    """The first placeholder in what `expression` reads: each name as the run resolves it, only the keys it reads
    below it when it reads keys only."""
    for name, keys in expression.reads.items():
        value = scope.lookup(name)
        if value is MISSING:
            continue
        if keys is not None and isinstance(value, dict):
            value = [value[key] for key in keys if key in value]
        found = placeholder_in(value)
        if found is not None:
            return found
    return None


# How a call's path parameter meets the value at that path: `read` (all of it), `change` (a step that changes it in
# place reads it whole too) or `target` (a step that replaces it reads only what stands above it).
_READ, _CHANGE, _TARGET = "read", "change", "target"


def _named_paths(call: Call, values: Mapping[str, Any]) -> list[tuple[StatePath, str]]:
    """The state paths a call's parameters name, each with how the call meets the value there."""
    found: list[tuple[StatePath, str]] = []
    condition = call.spec.kind == PRECONDITION
    for name in call.spec.paths:
        mode = _READ if condition or name in _READ_PATHS else _CHANGE if _changes_in_place(call, values) else _TARGET
        found.extend((path, mode) for path in _parsed(values.get(name)))
    for name in _FLAG_TARGETS:
        found.extend((("flags",) + path, _READ if condition else _TARGET) for path in _parsed(values.get(name)))
    return found


def _changes_in_place(call: Call, values: Mapping[str, Any]) -> bool:
    """A step that appends to, merges into or adds to the value at its `field`, rather than replacing it."""
    if call.type in ("append_state", "merge_state"):
        return True
    return call.type == "mutate_state" and values.get("operation") not in ("set", "clear")


def _placeholder_on(state: dict, path: StatePath, mode: str) -> str | None:
    """The first placeholder on the way to `path` (the value there included, unless `mode` is _TARGET)."""
    value: Any = state
    for part in path if mode != _TARGET else path[:-1]:
        if isinstance(value, dict):
            value = value.get(part)
        elif isinstance(value, list) and isinstance(part, int) and -len(value) <= part < len(value):
            value = value[part]
        else:
            return None
        if value.__class__ is str:
            return placeholder_in(value)
    return placeholder_in(value) if mode != _TARGET else None

