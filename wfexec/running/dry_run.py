"""`--dry-run`: run what only reads and changes the run's state; describe the rest, and stand in for its results.

A call whose type declares an outside effect (files, process, network, git, mcp) is
not run: it prints what it would do ("would write release/NOTES.md") and each
state path it would store a result at gets a marked placeholder,
`<dry-run: computed.sha>`. A state-only call that reads a placeholder stores
placeholders in turn (its real result cannot be known). A condition that reads
one cannot be decided: the run stops there (exit 4), naming the node and the
value. LLM steps print their prompt instead of sending it (Run.judge).
"""

from __future__ import annotations

import json
import re
from typing import Any

from wfexec.language.expressions import ExpressionError
from wfexec.language.model import Call, describe_call
from wfexec.language.paths import PathError, StatePath, format_path, parse_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Mapping

# Effects a dry run never lets happen. `llm` is the backend's (the prompt is printed, not sent); `display` prints.
OUTSIDE_EFFECTS = frozenset({"files", "process", "network", "git", "mcp"})
# Reading files is no change: a check with only this effect runs for real.
READ_ONLY_CHECK_EFFECTS = frozenset({"files"})
# A placeholder, wherever it stands in a value.
_MARK = re.compile(r"<dry-run: (.+?)>")
# Path parameters a consequence reads (`cache_web_content from:`), not writes.
_READ_PATHS = frozenset({"from"})
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

    def placeholder_read(self, call: Call) -> str | None:
        """The first placeholder path the call's parameters name, if any."""
        if not self.placeholders:
            return None
        text = json.dumps(call.raw, default=str)
        for path in self.placeholders:
            if re.search(re.escape(path) + r"(?![A-Za-z0-9_])", text):
                return path
        return None

    def skip(self, run, call: Call, scope) -> bool:
        """Apply `call` the dry way when it must not run: True when it was handled (not run)."""
        outside = set(call.spec.effects) & OUTSIDE_EFFECTS
        read = self.placeholder_read(call)
        if not outside and read is None:
            return False
        values = _rendered(call, scope)
        if outside:
            run.io.print(f"would {describe_call(call, values)}")
            what = describe_call(call, values)
        else:
            what = f"{call.type}, from {read} (not computed in a dry run)"
            run.io.trace(f"  dry run: {call.type} reads {read}; its result is a placeholder")
        for path in written_paths(call, values, lambda nested: _rendered(nested, scope)):
            self.put(run, path, what)
        return True

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

    def check_allowed(self, run, call: Call) -> None:
        """Stop the run (exit 4) when a condition cannot be decided without a real effect or result."""
        read = self.placeholder_read(call)
        if read is not None:
            run.stop(run.current, f"dry run stops here: {call.describe()} needs the real value of "
                     f"{read}, which the dry run did not compute (it would come from: {self.placeholders[read]})",
                     "the steps before it ran dry; run it for real to go further")
        outside = set(call.spec.effects) & OUTSIDE_EFFECTS - READ_ONLY_CHECK_EFFECTS
        if outside:
            run.stop(run.current, f"dry run stops here: deciding {call.describe()} would "
                     f"{'/'.join(sorted(outside))} for real", "run it for real to go further")


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
    for text in call.spec.writes:
        if text not in _KEPT_BY_THE_LOG_TYPES:
            found.extend(_parsed(text))
    for value in call.params.values():
        for nested in (value if isinstance(value, tuple) else (value,)):
            if isinstance(nested, Call):
                found.extend(written_paths(nested, render(nested), render))
    return list(dict.fromkeys(found))


def _parsed(text: Any) -> list[StatePath]:
    """The state path `text` names, in a list; none when it is not one."""
    if not isinstance(text, str) or not text:
        return []
    try:
        return [parse_path(text)]
    except PathError:
        return []


def _rendered(call: Call, scope) -> dict[str, Any] | None:
    try:
        return dict(call.render(scope))
    except ExpressionError:
        return None


def run_path(text: str) -> tuple:
    from wfexec.running.context import parse_cached

    return parse_cached(text)
