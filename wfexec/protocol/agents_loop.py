"""The agents loop of a states node, written once: launch every active agent's state, apply each result as it
comes, quiesce while an agent asks, ask, pause, and wait out usage limits.

Where an agent's state runs, how a question is answered and how the loop waits are its runner's (`AgentsRunner`):
the orchestrator (`wfexec.protocol.orchestrator`) runs each state in this process as a task, hands an asking or
paused agent back to its node (which asks through the run, or stops it for `wfexec resume`) and sleeps; the
Temporal workflow code runs each state as an activity on whichever worker is free, waits for the answer or the
`--rerun` as an update, and sleeps on Temporal's timer. The rules after a state (`advance`, `failed_attempt`,
`pause`, `settle_ask`, `limit_wait_of`) are the same for both, and for the orchestrator's inline run of a lone
agent's scripts.
"""

from __future__ import annotations

from wfexec.records import dataclass, field, replace

from wfexec.protocol.agents import MAIN, Agent, AgentsState, answered, apply, paused, reactivated
from wfexec.protocol.errors import PausesAgent, ProtocolError, Retryable, WorkflowUnreachable
from wfexec.protocol.tags import WORKFLOW_TAGS, Transition

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Awaitable, Callable
    import asyncio

MAX_ATTEMPTS = 3  # failed attempts at one state in a row before its agent is paused (Raymond's MaxRetries)


@dataclass
class StatesOutcome:
    """How a states run ended: the main agent's result and what the others returned."""

    result: str | None
    forks: list                      # [{"agent": id, "result": payload}] in the order they ended
    cost_usd: float
    steps: int
    workflow_id: str
    state: AgentsState
    records: list = field(default_factory=list)   # per state run: agent, state, stdout/stderr or prompt/reply

    def to_json(self) -> dict:
        return {"result": self.result, "forks": self.forks, "cost_usd": self.cost_usd, "steps": self.steps,
                "workflow_id": self.workflow_id}

    @property
    def asking(self) -> list[Agent]:
        """Agents waiting for a person's answer: the run stopped starting states until one comes."""
        return [a for a in self.state.agents if a.status == "asking"]

    @property
    def paused(self) -> list[Agent]:
        """Agents stopped by repeated failures or a usage limit: they run their state again on resume."""
        return [a for a in self.state.agents if a.status == "paused"]




def advance(state: AgentsState, agent: Agent, kind: str, session_id: str | None, transitions: list,
            base_cwd: str) -> tuple[Agent, list[Agent]]:
    """The agents after `agent` ran a state of this kind (script, markdown) that emitted `transitions` (resolved,
    a cross-workflow tag's input rendered): the agent moved, its workers added, an end recorded. Pure, so the
    Temporal workflow code applies a step that ran on any worker the same way."""
    if kind == "markdown":
        agent = replace(agent, session_id=session_id or agent.session_id, branch_from=None)
    agent = replace(agent, steps=agent.steps + 1)
    try:
        moved, workers = apply(agent, transitions, state.fork_counters, base_cwd)
    except ProtocolError as exc:
        error = WorkflowUnreachable if any(t.tag in WORKFLOW_TAGS for t in transitions) else ProtocolError
        raise error(f"{agent.id}: {agent.state}: {exc.message}", exc.hint) from None
    state.put(moved)
    for worker in workers:
        state.put(worker)
    if moved.status == "ended":
        state.ended.append(moved.id)
    return moved, workers


def failed_attempt(state: AgentsState, agent: Agent, error: Retryable) -> tuple[Agent, str]:
    """The agent after a failed attempt at its state, and what to say: tried again, or paused after
    MAX_ATTEMPTS in a row."""
    attempts = agent.retries + 1
    if attempts >= MAX_ATTEMPTS:
        return pause(state, agent, f"{error.message} (failed {attempts} times in a row)")
    again = replace(agent, retries=attempts)
    state.put(again)
    return again, f"warning: {error.message}; trying again ({attempts}/{MAX_ATTEMPTS - 1} retries)"


def pause(state: AgentsState, agent: Agent, why: str) -> tuple[Agent, str]:
    stopped = paused(agent, why)
    state.put(stopped)
    return stopped, f"states: {agent.id} paused at {agent.state}: {why}"


def settle_ask(state: AgentsState, moved: Agent, on_ask: str) -> tuple[bool, str | None]:
    """After an agent moved: whether the others quiesce (it asks), and what to say. With `on_ask: reject` an
    `<ask>` pauses its agent instead (`ray --on-ask=reject`)."""
    if moved.status != "asking":
        return False, None
    if on_ask == "reject":
        return False, pause(state, moved, f"it emitted <ask> ({moved.ask_prompt!r}), and --on-ask=reject is in "
                                          "effect (run with --on-ask=pause to let it ask)")[1]
    return True, None


def limit_wait_of(state: AgentsState, quiescing: bool, no_wait: bool) -> float | None:
    """Seconds until a usage limit resets, when every agent left is paused by one (None: nothing to wait for, or
    --no-wait: the paused agents stay paused)."""
    paused = [a.error or "" for a in state.agents if a.status == "paused"]
    if quiescing or no_wait or not paused:
        return None
    from wfexec.protocol.limits import limit_wait  # datetime and zoneinfo: for a run with a paused agent only

    return limit_wait(paused)


@dataclass(frozen=True)
class AgentsRunner:
    """Where and how the loop's work happens."""

    # (agent, spent so far) → one state of it, wherever it runs: {kind, session_id, cost_usd, transitions} (each a
    # Transition or its dict), {retry, hint, cost_usd}, {pause, cost_usd} (Orchestrator.step_one), or {fatal:
    # {message, hint, stop, routable}}. Called as the state is launched; a fatal error may also be raised.
    run_state: Callable[[Agent, float], Awaitable[dict]]
    sleep: Callable[[float], Awaitable[Any]]            # wait this many seconds for a usage limit to reset
    say: Callable[[str], None]                          # a warning for the person following the run
    # An asking agent → the answer to its `<ask>`; None: the loop ends, the asking agents handed back.
    answer: Callable[[Agent], Awaitable[str]] | None = None
    # Agents paused and no usage limit to wait out → returns once their states may run again; None: the loop ends,
    # the paused agents handed back.
    rerun: Callable[[list[Agent]], Awaitable[None]] | None = None
    # After each state's result is applied: (agent before, its result, the agent moved or None, its new workers).
    settled: Callable[[Agent, dict, Agent | None, list[Agent]], None] | None = None
    wait_note: str = ""                                 # said after how long a usage-limit wait is


def fatal_of(error: ProtocolError) -> dict:
    """A fatal error of an agent state as data, as it crosses to a runner that keeps the agents elsewhere."""
    return {"message": error.message, "hint": error.hint, "stop": error.outcome == "stopped",
            "routable": bool(getattr(error, "routable", False))}


class AgentFailed(Exception):
    """A fatal error of one agent's state, as data ({message, hint, stop, routable}): the node routes it or the
    run ends."""

    def __init__(self, fatal: dict):
        super().__init__(fatal.get("message"))
        self.fatal = fatal


async def run_agents(runner: AgentsRunner, state: AgentsState, *, count: Callable[[Agent], None], on_ask: str,
                     no_wait: bool, base_cwd: str) -> StatesOutcome:
    """The agents of `state` until none is active and none waits for a usage limit (or an answer or a rerun the
    runner brings). Raises AgentFailed, or the fatal error a state raised, on the first one (the other agents'
    states cancelled)."""
    import asyncio  # here, not at the top: a lone agent's scripts run inline, and asyncio costs a short script's CPU

    running: dict[str, asyncio.Future] = {}
    # Set as any state finishes: waiting on it costs the same with a thousand agents running as with one (waiting
    # on every running future at each finish would make a run of many forks quadratic).
    finished = asyncio.Event()
    quiescing, steps = False, 0
    spent = state.total_cost_usd
    try:
        while True:
            if not quiescing:
                for agent in state.active():
                    if agent.id not in running:
                        count(agent)
                        steps += 1
                        launched = running[agent.id] = asyncio.ensure_future(runner.run_state(agent, spent))
                        launched.add_done_callback(lambda _: finished.set())
            if not running:
                asking = [a for a in state.agents if a.status == "asking"]
                if asking and runner.answer is not None:
                    state.put(answered(asking[0], await runner.answer(asking[0])))
                    quiescing = False
                    continue
                paused_agents = [a for a in state.agents if a.status == "paused"]
                wait = limit_wait_of(state, quiescing, no_wait)
                if wait is None and paused_agents and not asking and runner.rerun is not None:
                    await runner.rerun(paused_agents)
                    for agent in paused_agents:
                        state.put(reactivated(agent))
                    continue
                if wait is None:
                    break
                runner.say(f"states: every agent left is paused by a usage limit; waiting {wait / 60:.0f} min for "
                           f"it to reset{runner.wait_note}")
                await runner.sleep(wait)
                for agent in state.agents:
                    state.put(reactivated(agent))
                continue
            await finished.wait()
            finished.clear()
            for agent_id, task in list(running.items()):  # in the order they started: the same on every replay
                if not task.done():
                    continue
                del running[agent_id]
                done: dict[str, Any] = task.result()
                if "fatal" in done:
                    raise AgentFailed(done["fatal"])
                spent, asks = _settle(runner, state, state.agent(agent_id), done, spent, on_ask, base_cwd)
                quiescing = quiescing or asks  # the others finish the state they are in, then wait with it
    finally:
        for left in running.values():
            left.cancel()
        if running:  # a state's scripts are killed with their process groups as it is cancelled
            await asyncio.gather(*running.values(), return_exceptions=True)
    main = next((a for a in state.agents if a.id == MAIN), None)
    return StatesOutcome(result=main.result if main else None,
                         forks=[{"agent": a, "result": state.agent(a).result} for a in state.ended if a != MAIN],
                         cost_usd=spent, steps=steps, workflow_id=state.workflow_id, state=state)


def _settle(runner: AgentsRunner, state: AgentsState, agent: Agent, done: dict, spent: float, on_ask: str,
            base_cwd: str) -> tuple[float, bool]:
    """One state's result applied: the agent tried again, paused, or moved. Returns the cost so far and whether
    the agent asks (the others quiesce)."""
    moved: Agent | None = None
    workers: list[Agent] = []
    asks = False
    spent += float(done.get("cost_usd") or 0.0)  # a state tried again or paused may have cost money too
    if "retry" in done:
        runner.say(failed_attempt(state, agent, Retryable(done["retry"], done.get("hint") or ""))[1])
    elif "pause" in done:
        runner.say(pause(state, agent, done["pause"])[1])
    else:
        transitions = [t if isinstance(t, Transition) else Transition(**t) for t in done["transitions"]]
        try:
            moved, workers = advance(state, agent, done["kind"], done.get("session_id"), transitions, base_cwd)
        except PausesAgent as exc:  # a cross-workflow tag whose workflow cannot be reached
            runner.say(pause(state, agent, exc.message)[1])
        else:
            asks, told = settle_ask(state, moved, on_ask)
            if told:
                runner.say(told)
    state.total_cost_usd = spent
    if runner.settled is not None:
        runner.settled(agent, done, moved, workers)
    return spent, asks
