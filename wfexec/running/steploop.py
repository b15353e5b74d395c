"""The one step loop: enter a node, run it, record the outcome, choose the next — for every driver.

A driver decides three things, and nothing else (DESIGN §1):
- how a step is persisted: the run's `journal` (none, the SQLite journal; on Temporal, its own history);
- how a step with outside effects runs: here, or handed over to the driver (`Driver.handed_over`, `run_step`:
  a Temporal activity);
- how the run waits for a person: `Driver.wait_for_answer` parks it (NeedsAnswer goes up to the door) or awaits
  the answer (a Temporal update).

Everything else is written once, here: the step budget and max_visits, `current_node`/`previous_node`, the step's
clock, the error boundary of a step, computed targets, the history entry with its timestamp (one format,
milliseconds), the history window, `--set` on a new run's state.

The loop is a coroutine, so a driver may await. A driver that never waits (`IN_PROCESS`, the ephemeral and SQLite
runs) runs it to its end with one `send`: no event loop, and a state-only step awaits nothing at all.
"""

from __future__ import annotations

import time

from wfexec.errors import WfexecError
from wfexec.language.expressions import ExpressionError, Template, to_text
from wfexec.running.engine import InternalError, Options, Result, Run, RunError, wall_ms
from wfexec.running.prompts import NeedsAnswer, check_answer_keys
from wfexec.running.state import apply_overrides
from wfexec.system import collector, progress

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Mapping
    from wfexec.language.model import Ending, Node, Workflow
    from wfexec.nodes.base import Outcome
    from wfexec.running.io import Io

# A run keeps this many of its latest steps in `state["history"]`, on every driver: the SQLite journal has every
# step (`wfexec show`), and a run of a million steps needs no more memory than one of a thousand.
HISTORY_WINDOW = 1000


class Driver:
    """How a run is driven. This one runs every step in this process, and parks the run on a question nobody
    answered (NeedsAnswer goes up to the door, which keeps the run waiting or reports it)."""

    handed_over: Mapping[str, Any] = {}  # ids of the nodes the driver runs itself, with `run_step`

    async def run_step(self, run: Run, node: Node) -> Outcome:
        raise NotImplementedError(f"{type(self).__name__} hands over no node, yet was asked to run '{node.id}'")

    async def wait_for_answer(self, waiting: NeedsAnswer) -> Any:
        """The answer to `waiting.question` (the node then runs again from its start, as NodeType.execute's
        contract says), or NeedsAnswer raised: the run parks."""
        raise waiting

    async def check_entry(self, run: Run) -> None:
        run.check_entry()

    async def finish(self, run: Run, ending: Ending) -> Result:
        return run.finish(ending)


IN_PROCESS = Driver()


def start(workflow: Workflow, *, io: Io, options: Options | None = None, inputs: dict | None = None,
          overrides: Mapping[str, Any] | None = None, clock: Callable[[], int] = wall_ms) -> Run:
    """A new run, before its first step: initial_state, the inputs, then each `--set PATH=VALUE` (BadOverride),
    the answers' keys checked against the workflow's questions (AnswerRefused)."""
    run = Run(workflow, io=io, options=options, inputs=inputs, clock=clock)
    check_answer_keys(workflow, run.options.answers)
    apply_overrides(run.state, overrides or {})
    return run


def run_to_end(run: Run, start_at: str | None = None, *, check_entry: bool = False) -> Result:
    """The loop in this process, to an ending (or a raised RunError / NeedsAnswer)."""
    steps = drive(run, IN_PROCESS, start_at, check_entry=check_entry)
    try:
        steps.send(None)
    except StopIteration as ended:
        return ended.value
    steps.close()
    raise RuntimeError("a run driven in process waited for something")  # a driver bug, never a workflow's


async def drive(run: Run, driver: Driver, start_at: str | None = None, *, check_entry: bool = True) -> Result:
    """Run from `start_at` (the start node) to an ending: the one step loop."""
    workflow = run.workflow
    if check_entry:
        await driver.check_entry(run)
    endings = workflow.endings
    handed_over = driver.handed_over
    node_id = start_at or workflow.start_node
    io = run.io
    tracing = io.tracing
    journal = run.journal
    context = run.node_context
    started = time.perf_counter() if tracing else 0.0
    collector.started()
    while node_id not in endings:
        node = enter(run, node_id)
        if tracing:
            io.trace(f"Node: {node_id} ({node.type})")
        if progress.current is not None:  # a status line shows where the run is (a call less a step without)
            progress.at_node(node_id)
        if journal is not None:
            journal.before_step(run, node)
        if node_id in handed_over:
            outcome = await driver.run_step(run, node)
        else:
            # `execute`'s error boundary, written out here: a call less at every step.
            try:
                outcome = node.kind.execute(node, context)
            except NeedsAnswer as waiting:
                outcome = await _answered(run, node, driver, waiting)
            except RunError:
                raise
            except Exception as exc:
                raise step_error(node, exc) from exc
        target = outcome.target
        if type(target) is not str:
            target = resolve_target(run, node, outcome)
        if tracing:
            io.trace(f"→ {outcome.label}: {target}")
        record(run, node, outcome.outcome, target)
        node_id = target
    run.current = None
    result = await driver.finish(run, endings[node_id])
    if tracing:  # here, so a run, a resumed run and a durable one all say how they ended
        io.trace(f"Ending: {result.ending} ({result.type}) after {result.steps} steps in "
                 f"{(time.perf_counter() - started) * 1000:.1f} ms")
    return result


async def _answered(run: Run, node: Node, driver: Driver, waiting: NeedsAnswer) -> Outcome:
    """The node run again from its start each time the driver brings the answer to what it asked."""
    while True:
        run.options.answers.give(waiting.question.key, await driver.wait_for_answer(waiting))
        try:
            return execute(run, node)
        except NeedsAnswer as again:
            waiting = again


def enter(run: Run, node_id: str) -> Node:
    """Starting a step at `node_id`, before the node runs: find the node, name it `current_node` (and the last
    step's `previous_node`), count the step against --max-steps and the node's max_visits, start its clock."""
    node = run.workflow.nodes.get(node_id)
    if node is None:
        run.fail(run.current, f"the target '{node_id}' is neither a node nor an ending",
                 "a computed target must name a node or an ending")
    run.current = node
    history = run.state["history"]
    runtime = run.runtime
    runtime["previous_node"] = history[-1]["node"] if history else None
    runtime["current_node"] = node_id
    budget = run.budget
    budget[0] += 1
    run.steps += 1
    max_steps = run.options.max_steps
    if budget[0] > max_steps:
        run.stop(node, f"the run took more than {max_steps} steps (last at node '{node_id}'); "
                       f"the loop through '{node_id}' does not end",
                 "fix the loop's exit condition, or raise --max-steps")
    if node.max_visits is not None:
        visits = run.visits[node_id] = run.visits.get(node_id, 0) + 1
        if visits > node.max_visits:
            run.stop(node, f"node '{node_id}' was entered {visits} times, more than its max_visits "
                           f"({node.max_visits})", "fix the loop that returns to it")
    # The step's clock: read the first time an expression asks (a resumed step reads when it first started).
    resumed = run.resumed_step_ms
    run.step_ms, run.resumed_step_ms, run.clock_served = resumed, None, False
    run.repeat_unsafe = False
    run.rerun_in_flight = resumed is not None
    return node


def execute(run: Run, node: Node) -> Outcome:
    """Run one node, wherever it runs (here, or in a Temporal activity): the error boundary of a step."""
    try:
        return node.kind.execute(node, run.node_context)
    except (RunError, NeedsAnswer):
        raise
    except Exception as exc:
        raise step_error(node, exc) from exc


def step_error(node: Node, exc: Exception) -> RunError:
    """Whatever went wrong in a node, reported at the node."""
    if isinstance(exc, WfexecError):  # a mistake in the workflow or its data: an expression, a path, an answer
        return RunError(exc.message, exc.hint, exc.where or node.where, exc.node or node.id)
    return InternalError(f"internal error: {type(exc).__name__}: {exc}",
                         "a bug in wfexec or a plugin; please report it with the output of --debug",
                         node.where, node.id)


def resolve_target(run: Run, node: Node, outcome: Outcome) -> str:
    """Where the step goes: its target, rendered when it is computed (`${...}`)."""
    target = outcome.target
    if type(target) is str and target:
        return target
    if isinstance(target, Template):
        if run.dry is not None:
            read = run.dry.reads(target, run.scope)
            if read is not None:
                run.dry.undecided(run, f"the target of {outcome.label} of node '{node.id}'", read)
        try:
            target = target.render(run.scope)
        except ExpressionError as exc:
            run.fail(node, f"cannot compute the target of {outcome.label}: {exc.message}", exc.hint)
    if target.__class__ is not str:
        target = to_text(target)
    if not target:
        run.fail(node, f"{outcome.label} has no target", f"add `{outcome.label}: <node or ending>`")
    workflow = run.workflow
    if workflow.default_error and target not in workflow.nodes and target not in workflow.endings:
        # v8: an unexpected failure goes to default_error, which reports it, instead of ending the run here
        run.keep_error(f"{node.id}: the target '{target}' of {outcome.label} is neither a node nor an ending",
                       "a computed target must name a node or an ending")
        return workflow.default_error
    return target


def record(run: Run, node: Node, outcome: dict, target: str) -> dict:
    """The step's history entry, kept in the run's window of history and told to its journal."""
    ms = run.clock()
    last = _stamped  # most steps share their millisecond with the last one: its text, without calling `stamp`
    entry = {"node": node.id, "type": node.type, "outcome": outcome, "target": target,
             "at": last[1] if ms == last[0] else stamp(ms)}
    history = run.state["history"]
    history.append(entry)
    if len(history) > HISTORY_WINDOW:
        del history[:-HISTORY_WINDOW]  # in place: expressions and the journal hold this list
    journal = run.journal
    if journal is not None:
        journal.after_step(run, node, entry)
    return entry


_stamped: tuple[int, str] = (-1, "")  # the millisecond last formatted and its text, replaced as one (threads)


def stamp(ms: int) -> str:
    """A history entry's time: ISO-8601 UTC with milliseconds, on every driver. Steps take microseconds, so most
    share a millisecond's text."""
    global _stamped
    last = _stamped
    if ms == last[0]:
        return last[1]
    second, rest = divmod(ms, 1000)
    text = f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(second))}.{rest:03d}Z"
    _stamped = (ms, text)
    return text
