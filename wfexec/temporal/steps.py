"""What the workflow code and the activities share, free of Temporal: the run as they rebuild it, the output a
run prints (kept to be printed by the command that follows the run), and the compiled workflow, loaded once per
worker.

A run's outside world reaches Temporal's history only through what is written here: its request (paths,
inputs, answers, the `env.` names it reads), what each effect step returned, and the answers given.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Sequence

from wfexec.durable.changes import record as record_changes
from wfexec.durable.journal import OUTSIDE_EFFECTS, has_outside_effects, is_idempotent
from wfexec.language.model import Workflow
from wfexec.errors import WfexecError
from wfexec.running.engine import InternalError, Journal, Options, Run, RunError
from wfexec.running.prompts import Answers
from wfexec.running.steploop import HISTORY_WINDOW
from wfexec.temporal.messages import ClusterRequest

# The header of the question a run asks when a non-idempotent step's attempt was lost (`resume --rerun/--skip`
# answer it).
RERUN_OR_SKIP = "Rerun or skip"
# Seconds without a heartbeat before Temporal gives an effect step's attempt up for lost (its worker died).
DEFAULT_HEARTBEAT_SECONDS = 10.0

Loader = Callable[[str], Workflow]
_workflows: dict[str, Workflow] = {}
_loader: list[Loader] = []


def use_loader(load: Loader) -> None:
    """How this worker compiles a workflow file (`wfexec.api.load`, given by the command that starts it)."""
    _loader[:] = [load]
    _workflows.clear()


def compiled(path: str, source_hash: str) -> Workflow:
    """The workflow the run started with. A file changed since then would make replaying the run take other
    paths than the run took: refused, with what to do."""
    workflow = _workflows.get(path)
    if workflow is None or workflow.source_hash != source_hash:
        if not _loader:
            raise RunError("this process cannot load workflows (no loader)", "start workers with `wfexec worker`")
        try:
            workflow = _workflows[path] = _loader[0](path)
        except WfexecError as exc:  # an invalid or missing file: the run fails with why, it does not hang
            raise RunError(f"cannot load the workflow {path} on this worker: {exc.message}",
                           "give every worker the same wfexec and plugins as where the run started") from None
        except Exception as exc:  # a bug in the loading, not the files: said so, so nobody goes checking them
            raise InternalError(f"internal error loading the workflow {path} on this worker: "
                                f"{type(exc).__name__}: {exc}",
                                "a bug in wfexec; please report it with the worker's output") from exc
    if workflow.source_hash != source_hash:
        raise RunError(f"the workflow {path} changed since the run started, or this worker sees another copy",
                       "give every worker the same files; start a new run for the new version")
    return workflow


_ENV_NAME = re.compile(r"\benv\.([A-Za-z_][A-Za-z0-9_]*)")


def env_names(workflow: Workflow) -> list[str]:
    """The environment variables a workflow's expressions may read (`env.NAME` in its file). Only these travel
    with the run: the whole environment of the person starting it (tokens included) would be stored in the
    cluster's history."""
    try:
        text = Path(workflow.path).read_text(encoding="utf-8")
    except OSError:
        return []
    return sorted(set(_ENV_NAME.findall(text)))


def effect_nodes(workflow: Workflow) -> dict[str, bool]:
    """Node id → idempotent, for the nodes that touch the world (the SQLite journal's own test)."""
    return {node_id: is_idempotent(workflow, node) for node_id, node in workflow.nodes.items()
            if has_outside_effects(workflow, node)}


def touches_the_world(calls) -> bool:
    """Whether any of these calls (an entry gate's preconditions, an ending's consequences), nested ones included,
    has outside effects: then it runs in an activity, as an effect step does, never in the workflow code."""
    return any(OUTSIDE_EFFECTS & set(inner.spec.effects) for call in calls for inner in call.walk())


class RecordingIo:
    """The `Io` of a run on the cluster: what the run prints is kept as events, which the command following
    the run prints (`wfexec.commands.temporal_runs`). Nobody is at a terminal here: a question parks the run."""

    tracing = False

    def __init__(self, events: list | None = None):
        self.events: list = events if events is not None else []

    def print(self, text: str = "") -> None:
        self.events.append(["print", str(text)])

    def markdown(self, text: str) -> None:
        self.events.append(["markdown", str(text)])

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None) -> None:
        self.events.append(["table", [str(h) for h in headers], [[str(c) for c in row] for row in rows], title])

    def error(self, text: str) -> None:
        self.events.append(["error", str(text)])

    def trace(self, text: str) -> None:
        pass

    def ask(self, question) -> Any:
        return None  # never called: runs on the cluster are not interactive


def replay_events(events: Sequence, io) -> None:
    """Print recorded events through a real `Io`."""
    for event in events:
        kind = event[0]
        if kind == "print":
            io.print(event[1])
        elif kind == "markdown":
            io.markdown(event[1])
        elif kind == "table":
            io.table(event[1], event[2], event[3])
        elif kind == "error":
            io.error(event[1])


def run_options(request: ClusterRequest, answers: dict | None = None) -> Options:
    """The options of a run as its request gives them (nobody is at a terminal on the cluster)."""
    return Options(max_steps=request.max_steps, interactive=False,
                   answers=Answers(answers if answers is not None else request.answers), cwd=Path(request.cwd))


def make_run(workflow: Workflow, request: ClusterRequest, io, state: dict | None = None,
             answers: dict | None = None) -> Run:
    """A Run as the request describes it, for one step of it in an activity."""
    run = Run(workflow, io=io, options=run_options(request, answers), inputs=request.inputs, state=state)
    with_request_env(run, request)
    return run


def with_request_env(run: Run, request: ClusterRequest) -> Run:
    """What `env.` reads: what was sent with the run (see env_names), the same in every process and replay."""
    run.extras["env"] = dict(request.env)
    return run


def error_json(exc: RunError) -> dict:
    """A run error as the command that follows the run reports it."""
    return {"outcome": exc.outcome, "text": exc.format(), **exc.to_json()}


class StepLog(Journal):
    """A run's journal on the cluster: its latest HISTORY_WINDOW steps, each with what it changed, kept in the
    workflow's memory (Temporal's own history is what makes the run durable; a replay rebuilds this). `wfexec
    show RUN --temporal --format json` gives it as `journal`, in the rows a SQLite run's journal has (without
    durations: the workflow code reads no clock but Temporal's)."""

    def __init__(self, on_changes: Callable[[dict, dict, list], None] | None = None) -> None:
        self.rows: list[dict] = []
        self.step = 0
        self.on_changes = on_changes  # told each step's changes (`state_changes.ShippedState.note`)

    def after_step(self, run: Run, node, entry: dict) -> None:
        self.step += 1
        sets, appends, removed = record_changes(run.state, run.changed, run.appended)
        run.changed.clear()
        run.appended.clear()
        if self.on_changes is not None:
            self.on_changes(sets, appends, removed)
        row = {"step": self.step, **entry, "changes": sets}
        if appends:
            row["appended"] = appends
        if removed:
            row["removed"] = removed
        self.rows.append(row)
        if len(self.rows) > HISTORY_WINDOW:
            del self.rows[:-HISTORY_WINDOW]


def written(run: Run) -> dict:
    """The state paths a step wrote and appended to, as an activity returns them, so the workflow code's journal
    records the step's changes as if it had run there (`mark_written`)."""
    return {"written": [list(path) for path in run.changed],
            "appended": [[list(path), count] for path, count in run.appended.items()]}


def mark_written(run: Run, done) -> None:
    """What an effect step wrote (`EffectStepResult`), marked as written in the workflow code's run."""
    for path in done.written or ():
        run.changed[tuple(path)] = None
    for path, count in done.appended or ():
        key = tuple(path)
        run.appended[key] = run.appended.get(key, 0) + count
