"""`wfexec states PATH`: a states folder run on its own, without a workflow.yaml around it.

PATH is a directory, a `.zip`, a Raymond `.yaml`/`.yml`, `FLOW.yaml/STATE` (start
at STATE), or one state file (`flow/REVIEW.md`: its folder, starting there).
"""

from __future__ import annotations

import os
from wfexec.records import dataclass, field
from pathlib import Path

from wfexec.protocol.folders import raymond_manifest, split_path
from wfexec.protocol.errors import ProtocolError, ScopeError, StopRun
from wfexec.protocol.scopes import StateScope, open_scope
from wfexec.running.request import DEFAULT_MAX_STEPS

TYPE_CHECKING = False
if TYPE_CHECKING:  # `validate` reads this module to tell a states folder from a workflow: it stays light
    from typing import Any
    from wfexec.running.console import Console


@dataclass
class StatesRunResult:
    """How `wfexec states` ended."""

    status: str                      # completed | failed | stopped | invalid
    result: str | None = None        # the main agent's final <result> payload
    forks: list = field(default_factory=list)
    cost_usd: float = 0.0
    steps: int = 0
    workflow_id: str | None = None
    error: str | None = None
    hint: str = ""
    outcome: Any = None              # the StatesOutcome, when the run completed

    @property
    def exit_code(self) -> int:
        """What the command should exit with."""
        from wfexec.exit_codes import exit_code_for

        return exit_code_for(self.status)

    def message(self) -> str:
        if self.error:
            return f"error: {self.error}" + (f" — {self.hint}" if self.hint else "")
        return self.result or ""

    def to_json(self) -> dict:
        return {"status": self.status, "exit_code": self.exit_code, "result": self.result, "forks": self.forks,
                "cost_usd": self.cost_usd, "steps": self.steps, "workflow_id": self.workflow_id,
                "error": self.error, "hint": self.hint or None}


def run_states_path(path: str | os.PathLike, *, input: str | None = None, backend: Any = None,
                    budget_usd: float | None = None, cwd: str | os.PathLike | None = None, io: Console | None = None,
                    trace: bool = False, start: str | None = None, timeout: float | None = None,
                    model: str | None = None, effort: str | None = None,
                    max_steps: int = DEFAULT_MAX_STEPS, answers: dict[str, str] | None = None) -> StatesRunResult:
    """Run a states folder in this process, unrecorded (`wfexec states` records its runs: `execute_states`).
    An `<ask>` takes its answer from `answers` (agent id → text), else the result is `waiting`; agents paused by
    failures make it `stopped`. Never raises for a user error: the result says what happened."""
    from wfexec.protocol.orchestrator import Orchestrator

    from wfexec.running.console import Console
    from wfexec.system import progress

    io = io or Console(trace=trace)
    scope_path, named_start = split_path(path)
    try:
        if budget_usd is not None and budget_usd < 0:
            raise ScopeError("a budget cannot be negative")
        scope: StateScope = open_scope(scope_path, str(scope_path))
    except ScopeError as exc:
        return StatesRunResult("invalid", error=exc.message, hint=exc.hint)
    steps = [0]

    def count_step(agent) -> None:
        steps[0] += 1
        if steps[0] > max_steps:
            from wfexec.protocol.errors import StepLimit

            raise StepLimit(f"{agent.id}: more than {max_steps} states ran (the last at {agent.state}); the loop "
                            "does not end", "fix the loop's exit, or raise --max-steps")

    orchestrator = Orchestrator(scope, backend=backend, io=io, cwd=cwd, budget_usd=budget_usd, timeout=timeout,
                                timeout_source="--timeout", model=model, effort=effort, on_step=count_step)
    io.trace(f"states: running {scope.describe()}" + (f" with {backend.describe()}"
                                                       if hasattr(backend, "describe") else ""))
    try:
        with io.status_line():
            progress.at_node(scope_path.name)  # the scripts and LLM turns report themselves, agent included
            outcome = orchestrator.run(start=start or named_start, input=input)
            while outcome.asking and (answers or {}).get(outcome.asking[0].id) is not None:
                from wfexec.protocol.agents import answered

                asking = outcome.asking[0]
                outcome.state.put(answered(asking, (answers or {})[asking.id]))
                outcome = orchestrator.run(state=outcome.state)
    except ScopeError as exc:
        return StatesRunResult("invalid", error=exc.message, hint=exc.hint,
                               workflow_id=orchestrator.workflow_id)
    except StopRun as exc:
        return StatesRunResult("stopped", error=exc.message, hint=exc.hint,
                               cost_usd=orchestrator.budget.spent, steps=orchestrator.steps,
                               workflow_id=orchestrator.workflow_id)
    except ProtocolError as exc:
        return StatesRunResult("failed", error=exc.message, hint=exc.hint,
                               cost_usd=orchestrator.budget.spent, steps=orchestrator.steps,
                               workflow_id=orchestrator.workflow_id)
    if outcome.asking or outcome.paused:
        if outcome.asking:
            agent = outcome.asking[0]
            status, error, hint = "waiting", f"{agent.id} asks: {agent.ask_prompt}", \
                f"answer with --answer {agent.id}=TEXT"
        else:
            status = "stopped"
            error = "; ".join(f"{a.id} paused at {a.state}: {a.error}" for a in outcome.paused)
            hint = "fix the cause, then run again (`wfexec states` records its runs, so they can be resumed)"
        return StatesRunResult(status, error=error, hint=hint, cost_usd=outcome.cost_usd, steps=outcome.steps,
                               workflow_id=outcome.workflow_id, outcome=outcome)
    return StatesRunResult("completed", result=outcome.result, forks=outcome.forks, cost_usd=outcome.cost_usd,
                           steps=outcome.steps, workflow_id=outcome.workflow_id, outcome=outcome)


def manifest_warnings(manifest: dict | None) -> list[str]:
    """What a Raymond manifest asks for that wfexec does not do (a backend other than Claude Code and pi)."""
    backend = (manifest or {}).get("backend")
    name = backend if isinstance(backend, str) else backend.get("name") if isinstance(backend, dict) else None
    if backend is None or name in ("", "claude", "pi"):
        return []
    return [f"warning: the workflow's manifest asks for the {name or 'given'!s} backend, which wfexec does not "
            "have (claude or pi); its .md states stop at their first LLM call"]


def states_workflow(path: str | os.PathLike, into: Path, *, start: str | None, with_input: bool,
                    budget_usd: float | None, timeout: float | None, model: str | None,
                    warn=None, relative_folder: bool = False, **fields: Any) -> Path:
    """A workflow of one `states` node running PATH, written into `into` (named by its content, so the same
    command line finds the same file): what `wfexec states` runs, so that its run is recorded and resumed like
    any other, with what it was launched with (`fields`: the node's effort, on_ask, no_wait, …; a None or false
    one is left out). `relative_folder`: the folder is named from where the workflow is written, so the two
    travel together (a run on a Temporal cluster bundles both). Raises ScopeError when PATH is not a states
    folder."""
    from wfexec.system.digest import sha256
    import json

    scope_path, named_start = split_path(path)
    scope = open_scope(scope_path, str(scope_path))  # a missing or malformed folder: said of what was given
    first = start or named_start
    if first:  # said of the flag (or the path) that named it, not of the workflow written below: a file of ours
        from wfexec.protocol.scopes import resolve_state

        try:
            resolve_state(scope, first)
        except ProtocolError as exc:
            raise ScopeError(f"{f'--start {start}' if start else path}: {exc.message}", exc.hint) from None
    folder = scope_path.resolve()
    manifest = raymond_manifest(folder) if folder.is_dir() else None
    for text in manifest_warnings(manifest):
        if warn is not None:
            warn(text)
    named = os.path.relpath(folder, into.resolve()) if relative_folder else str(folder)
    node: dict[str, Any] = {"type": "states", "folder": named}
    if start or named_start:
        node["start"] = start or named_start
    if with_input:  # the text goes in as the workflow's input: a `${` in it stays text
        node["input"] = "${input.input}"
    budget = budget_usd if budget_usd is not None else (manifest or {}).get("default_budget")
    for key, value in (("budget_usd", budget), ("timeout", timeout), ("model", model), *fields.items()):
        if value is not None and value is not False:
            node[key] = value
    # No on_failure: a failed state is the run's error (stderr, exit 1), as it was before runs were recorded.
    node.update({"store_as": "computed.result", "on_success": "done"})
    name = str((manifest or {}).get("id") or folder.stem or "states")
    workflow = {
        "name": name, "version": "1",
        "description": f"`wfexec states {path}`: the states at {folder}, run as a one-node workflow",
        "start_node": "agents",
        **({"input_schema": {"input": {"type": "string", "required": True}}} if with_input else {}),
        "nodes": {"agents": node},
        "endings": {"done": {"type": "success", "message": "${computed.result}"}},
    }
    text = "# Written by wfexec: what `wfexec states` runs (and `wfexec resume` reads again).\n" + \
        json.dumps(workflow, indent=2, ensure_ascii=False) + "\n"
    into.mkdir(parents=True, exist_ok=True)
    target = into / f"{''.join(c if c.isalnum() or c in '-_' else '-' for c in name)[:40]}-" \
                    f"{sha256(text.encode()).hexdigest()[:12]}.yaml"
    if not target.exists():
        from wfexec.system.files import write_atomic

        write_atomic(target, text)
    return target
