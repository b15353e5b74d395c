"""`wfexec states PATH`: a states folder run on its own, without a workflow.yaml around it.

PATH is a directory, a `.zip`, a Raymond `.yaml`/`.yml`, `FLOW.yaml/STATE` (start
at STATE), or one state file (`flow/REVIEW.md`: its folder, starting there).
"""

from __future__ import annotations

import os
from wfexec.records import dataclass, field
from pathlib import Path

from wfexec.protocol.folders import split_path
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
