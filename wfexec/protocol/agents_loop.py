"""The agents loop of a states node, written once: launch every active agent's state, apply each result as it
comes, quiesce while an agent asks, ask, pause, and wait out usage limits.

Where an agent's state runs, how a question is answered and how the loop waits are its runner's (`AgentsRunner`):
the Temporal workflow code runs each state as an activity on whichever worker is free, answers through an update
and sleeps on Temporal's timer. The rules for what happens after a state (`settle_ask`, `limit_wait_of`) are
shared with the in-process orchestrator (`wfexec.protocol.orchestrator`), which runs a lone agent's scripts
inline and each agent's states as a task of its own.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from wfexec.protocol.agents import MAIN, Agent, AgentsState, answered, reactivated
from wfexec.protocol.errors import ProtocolError, Retryable
from wfexec.protocol.orchestrator import StatesOutcome, advance, failed_attempt, limit_wait_of, pause, settle_ask


@dataclass(frozen=True)
class AgentsRunner:
    """Where and how the loop's work happens."""

    run_state: Callable[[Agent, float], Awaitable[dict]]  # (agent, spent so far) → one state of it, wherever it
    #                                                       runs, as Orchestrator.step_one gives it, or {fatal}
    answer: Callable[[Agent], Awaitable[str]]           # an asking agent → the answer to its `<ask>`
    rerun: Callable[[list[Agent]], Awaitable[None]]     # agents paused, no usage limit to wait out → returns once
    #                                                     their states may run again
    sleep: Callable[[float], Awaitable[Any]]            # wait this many seconds for a usage limit to reset
    say: Callable[[str], None]                          # a warning for the person following the run


class AgentFailed(Exception):
    """A fatal error of one agent's state ({message, hint, stop, routable}): the node routes it or the run ends."""

    def __init__(self, fatal: dict):
        super().__init__(fatal.get("message"))
        self.fatal = fatal


async def run_agents(runner: AgentsRunner, state: AgentsState, *, count: Callable[[Agent], None], on_ask: str,
                     no_wait: bool, base_cwd: str) -> StatesOutcome:
    """Every agent of `state` to its end. Raises AgentFailed on the first fatal error (the others cancelled)."""
    from wfexec.protocol.tags import Transition

    running: dict[str, asyncio.Future] = {}
    quiescing, steps = False, 0
    spent = state.total_cost_usd
    while True:
        if not quiescing:
            for agent in state.active():
                if agent.id not in running:
                    count(agent)
                    steps += 1
                    running[agent.id] = asyncio.ensure_future(runner.run_state(agent, spent))
        if not running:
            asking = [a for a in state.agents if a.status == "asking"]
            if asking:
                state.put(answered(asking[0], await runner.answer(asking[0])))
                quiescing = False
                continue
            paused = [a for a in state.agents if a.status == "paused"]
            wait = limit_wait_of(state, quiescing, no_wait)
            if wait is None and paused:
                await runner.rerun(paused)
                for agent in paused:
                    state.put(reactivated(agent))
                continue
            if wait is None:
                break
            runner.say(f"states: every agent left is paused by a usage limit; waiting {wait / 60:.0f} min for it to "
                       "reset")
            await runner.sleep(wait)
            for agent in state.agents:
                state.put(reactivated(agent))
            continue
        await asyncio.wait(list(running.values()), return_when=asyncio.FIRST_COMPLETED)
        for agent_id, task in list(running.items()):  # in the order they started: the same on every replay
            if not task.done():
                continue
            del running[agent_id]
            done: dict[str, Any] = task.result()
            agent = state.agent(agent_id)
            fatal = done.get("fatal")
            if "retry" in done:
                runner.say(failed_attempt(state, agent, Retryable(done["retry"], done.get("hint") or ""))[1])
            elif "pause" in done:
                runner.say(pause(state, agent, done["pause"])[1])
            elif fatal is None:
                spent += float(done.get("cost_usd") or 0.0)
                state.total_cost_usd = spent
                try:
                    moved, _ = advance(state, agent, done["kind"], done.get("session_id"),
                                       [Transition(**t) for t in done["transitions"]], base_cwd)
                except ProtocolError as exc:
                    fatal = {"message": exc.message, "hint": exc.hint}
                else:
                    asks, told = settle_ask(state, moved, on_ask)
                    quiescing = quiescing or asks  # the others finish the state they are in, then wait with it
                    if told:
                        runner.say(told)
            if fatal is not None:
                for other in running.values():
                    other.cancel()
                raise AgentFailed(fatal)
    main = next((a for a in state.agents if a.id == MAIN), None)
    return StatesOutcome(result=main.result if main else None,
                         forks=[{"agent": a, "result": state.agent(a).result} for a in state.ended if a != MAIN],
                         cost_usd=spent, steps=steps, workflow_id=state.workflow_id, state=state)
