"""What a precondition or consequence handler sees: `CallContext`.

Handlers get the run's state, I/O and working directory through it, and
read and write state paths with it, so the run can record what changed.
"""

from __future__ import annotations

import os
from pathlib import Path

from wfexec.language.expressions import Expression, ExpressionError, Scope, render_value
from wfexec.language.model import Call, Node, Workflow
from wfexec.errors import ActionFailed
from wfexec.language.paths import PathError, StatePath, get_path, parse_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping
    from wfexec.language.prose import Prose
    from wfexec.running.engine import Run
    from wfexec.running.io import Io


class CallContext:
    """What a precondition or consequence handler sees."""

    __slots__ = ("run", "call", "scope")

    def __init__(self, run: Run, call: Call, scope: Scope):
        self.run = run
        self.call = call
        self.scope = scope

    @property
    def state(self) -> dict[str, Any]:
        return self.run.state

    @property
    def io(self) -> Io:
        return self.run.io

    @property
    def cwd(self) -> Path:
        return self.run.cwd

    @property
    def workflow(self) -> Workflow:
        return self.run.workflow

    @property
    def node(self) -> Node | None:
        return self.run.current

    def path(self, text: Any) -> StatePath:
        """A state path given as a parameter; raises ActionFailed when malformed."""
        if not isinstance(text, str):  # a `${}` that gave a number, a function, nothing...
            raise ActionFailed(f"a state path must be text such as computed.x, not {type(text).__name__ if text is not None else 'null'}")
        try:
            return parse_cached(text)
        except PathError as exc:
            raise ActionFailed(str(exc)) from None

    def get(self, path: str | StatePath, default: Any = None) -> Any:
        parts = path if isinstance(path, tuple) else self.path(path)
        return get_path(self.run.state, parts, default)

    def set(self, path: str | StatePath, value: Any) -> None:
        parts = path if isinstance(path, tuple) else \
            (_path_cache.get(path) if isinstance(path, str) else None) or self.path(path)
        try:
            self.run.write(parts, value)
        except PathError as exc:
            raise ActionFailed(str(exc)) from None

    def append(self, path: str | StatePath, value: Any) -> None:
        """Append `value` to the list at `path`, in place (a missing or null one becomes a new list)."""
        parts = path if isinstance(path, tuple) else self.path(path)
        try:
            self.run.append(parts, value)
        except PathError as exc:
            raise ActionFailed(str(exc)) from None

    def replace_state(self, new_state: Mapping[str, Any]) -> None:
        """Swap the whole state for another (rollback); every key, kept, new or gone, counts as changed."""
        state = self.run.state
        self.run.changed.update(dict.fromkeys((key,) for key in state))
        state.clear()
        state.update(new_state)
        self.run.changed.update(dict.fromkeys((key,) for key in state))

    def check(self, call: Call, **local_values: Any) -> bool:
        return self.run.check(call, self.scope.child(**local_values) if local_values else self.scope)

    def apply(self, call: Call, **local_values: Any) -> None:
        self.run.apply(call, self.scope.child(**local_values) if local_values else self.scope)

    def evaluate(self, expression: Expression | Prose, **local_values: Any) -> Any:
        scope = self.scope.child(**local_values) if local_values else self.scope
        if not isinstance(expression, Expression):  # Prose: imported by a workflow that has some, not by every run
            return self.run.judge_prose(expression, scope, self.call)
        try:
            return expression.evaluate(scope)
        except ExpressionError as exc:
            raise ActionFailed(exc.message, exc.hint) from None

    def render(self, value: Any, **local_values: Any) -> Any:
        scope = self.scope.child(**local_values) if local_values else self.scope
        try:
            return render_value(value, scope)
        except ExpressionError as exc:
            raise ActionFailed(exc.message, exc.hint) from None

    def resolve_file(self, path: str) -> Path:
        """A file parameter: relative paths are relative to the run's working directory."""
        p = Path(os.path.expanduser(path))
        return p if p.is_absolute() else self.run.cwd / p

    def trace(self, text: str) -> None:
        self.run.io.trace(text)

    def program_output(self, text: str) -> None:
        """One line about a program the step runs: its command line, a line it wrote, how it ended. Traced
        (`--trace`, indented), and kept with a durable run (`wfexec serve` shows it)."""
        run = self.run
        if run.io.tracing:
            run.io.trace("  " + text)
        if run.keeps_output:
            run.record_output(text)

    def judge(self, prompt: str, purpose: str) -> str:
        """Send a judgement step to the LLM backend and return its reply."""
        return self.run.judge(prompt, purpose)


_path_cache: dict[str, StatePath] = {}


def parse_cached(text: str) -> StatePath:
    parts = _path_cache.get(text)
    if parts is None:
        parts = parse_path(text)
        if len(_path_cache) < 4096:
            _path_cache[text] = parts
    return parts
