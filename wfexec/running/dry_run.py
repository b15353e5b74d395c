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

# Effects a dry run never lets happen. `llm` is the backend's (the prompt is printed, not sent); `display` prints.
OUTSIDE_EFFECTS = frozenset({"files", "process", "network", "git", "mcp"})
# Reading files is no change: a check with only this effect runs for real.
READ_ONLY_CHECK_EFFECTS = frozenset({"files"})


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
        for name in call.spec.paths:
            target = (values or {}).get(name)
            if isinstance(target, str) and target:
                run.set(run_path(target), placeholder(target))
                self.placeholders[target] = what
        return True

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


def _rendered(call: Call, scope) -> dict[str, Any] | None:
    try:
        return dict(call.render(scope))
    except ExpressionError:
        return None


def run_path(text: str) -> tuple:
    from wfexec.running.context import parse_cached

    return parse_cached(text)
