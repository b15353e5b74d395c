"""Running one `.md` prompt state down to its resolved transitions (reference §1.4–§1.6).

The body rendered with `{{…}}` values goes to the backend. With `allowed_transitions`, a reply with no tag,
several tags, an unknown target or a tag the policy does not allow is re-prompted with the reminder block, up to
three invocations in all; without one it is fatal. A malformed tag is always fatal. Imported when a prompt state
first runs: a run of scripts never needs the policy, the templates or the backends.
"""

from __future__ import annotations

from wfexec.records import replace
from typing import TYPE_CHECKING

from wfexec.protocol.errors import (BackendMissing, ForkGroupInvalid, ProtocolError, Retryable, StopRun,
                                    UsageLimit)
from wfexec.protocol.executors import (ForkGroupProblem, OutputProblem, StepResult, _group_consistent, _resolved,
                                       check_transitions, state_timeout)
from wfexec.protocol.policy import (MAX_INVOCATIONS, Policy, PolicyError, check_transition, implicit_entry,
                                    implicit_transition, parse_frontmatter, reminder)
from wfexec.protocol.tags import WORKFLOW_TAGS, PrintScanner, TagError, Transition, extract_prints, parse_transitions
from wfexec.protocol.templates import render, template_values

from wfexec.protocol.agents import CONTINUE_LATEST

if TYPE_CHECKING:
    from wfexec.backends.base import LLMRequest
    from wfexec.protocol.agents import Agent
    from wfexec.protocol.orchestrator import Orchestrator


async def run_markdown_state(orch: "Orchestrator", agent: "Agent") -> StepResult:
    from wfexec.backends.base import LLMRequest

    name = agent.state
    where = f"{agent.id}: {name}"
    try:
        text = orch.scope_for(agent).read_text(name)
    except ProtocolError as exc:  # deleted or unreadable for now: tried again, then the agent is paused
        raise Retryable(f"{agent.id}: {exc.message}", exc.hint) from None
    try:
        policy, body = parse_frontmatter(text)
    except PolicyError as exc:  # as Raymond's prompt-file error: tried again (the file may be fixed), then paused
        raise Retryable(f"{where}: {exc.message}", exc.hint or "fix the frontmatter between the two `---` lines") \
            from None
    if policy is not None and policy.unknown:
        orch.warn(f"{name}: unknown frontmatter field{'s' if len(policy.unknown) > 1 else ''} "
                  f"{', '.join(policy.unknown)} (ignored; known: allowed_transitions, model, effort, force_implicit)")
    backend = orch.backend_for(agent)
    if backend is None:
        raise BackendMissing(f"{where} is an LLM state, and no LLM backend is configured",
                             "run with --backend claude (or command:PROGRAM, or --replay CASSETTE)")
    values = template_values(workflow_id=orch.workflow_id, agent_id=agent.id, task_folder=orch.task_folder(agent),
                             input=agent.input, fork_attributes=agent.fork_attributes, ask_id=agent.pending_ask_id)
    prompt = render(body, values)
    model = (policy.model if policy else None) or orch.model
    effort = (policy.effort if policy else None) or orch.effort
    # Not every backend streams (a `command:` program replies once): only a timeout someone set applies to a turn.
    timeout, timeout_source = state_timeout(orch, agent, name, default=None)
    session = agent.session_id
    resume, branch = (agent.branch_from, True) if agent.branch_from else (session, False)
    if branch and resume != CONTINUE_LATEST and agent.stack and orch.backend_for(agent, agent.stack[-1].scope) \
            is not backend:
        resume, branch = None, False  # called from a workflow on another backend: its session means nothing here
    turn_prompt, cost, problems = prompt, 0.0, []
    for attempt in range(1, MAX_INVOCATIONS + 1):
        orch.budget.check(agent.id, name)
        latest = resume == CONTINUE_LATEST
        stream = _TurnStream(orch, agent)
        request = LLMRequest(prompt=turn_prompt, session_id=None if latest else resume, fork_session=branch,
                             model=model, effort=effort, cwd=orch.agent_cwd(agent), agent_id=agent.id, state=name,
                             timeout=timeout, attempt=attempt, continue_latest=latest, stream=stream)
        try:
            reply = await _invoke(backend, request, where, timeout_source)
        except ProtocolError as failure:  # a failed turn may have cost money all the same
            orch.budget.add(failure.cost_usd)
            failure.cost_usd += cost
            raise
        cost += reply.cost_usd
        orch.budget.add(reply.cost_usd)
        if reply.error:  # e.g. Claude's error_max_turns: its text is the reply, as in Raymond
            orch.trace(f"{where}: {reply.error}; the turn's text is taken as its reply")
        if reply.session_id:
            session = reply.session_id
        resume, branch = session, False  # reminders continue the session the failed turn produced
        if reply.text.strip() not in stream.streamed:  # not seen as it streamed (a backend that replies at once)
            orch.printer(agent)(extract_prints(reply.text))
        record = orch.keep_record(agent, "markdown", prompt=turn_prompt, reply=reply.text, cost_usd=reply.cost_usd,
                                  session_id=session, attempt=attempt)
        try:
            transitions = decide(orch, agent, policy, reply.text, values)
        except TagError as exc:
            raise ProtocolError(f"{where}: {exc}") from None
        except ForkGroupProblem as problem:
            raise ForkGroupInvalid(f"{where}: the reply {problem}",
                                   "fix the prompt's forks, then `wfexec resume RUN` runs the state again") from None
        except OutputProblem as problem:
            if policy is None or not policy.has_rules:
                raise ProtocolError(f"{where}: the reply {problem}",
                                    "add allowed_transitions frontmatter to get reminder re-prompts") from None
            problems.append(str(problem))
            orch.trace(f"{where}: the reply {problem}; re-prompting with a reminder ({attempt}/{MAX_INVOCATIONS})")
            turn_prompt = prompt + reminder(policy)
            continue
        return StepResult(transitions, "markdown", session_id=session, cost_usd=cost, record=record)
    raise ProtocolError(f"{where}: no valid transition after {MAX_INVOCATIONS} reminder attempts "
                        f"(last: the reply {problems[-1]})",
                        "make the prompt say which tag to emit, or give it a single implicit transition")


class _TurnStream:
    """One LLM turn as it streams: each JSON object goes to the debug file, and the model's text is scanned for
    `<print>` blocks, shown as soon as each is closed (not when the turn ends)."""

    def __init__(self, orch: "Orchestrator", agent: "Agent"):
        self._printer = orch.printer(agent)
        self._scanner = PrintScanner()
        self._write = orch.debug.stream_writer(agent) if orch.debug is not None else None
        self.streamed = ""  # the model's text as it came

    def event(self, event) -> None:
        if self._write is not None:
            self._write(event)

    def text(self, chunk: str) -> None:
        self.streamed += chunk
        self._printer(self._scanner.feed(chunk))


async def _invoke(backend, request: "LLMRequest", where: str, timeout_source: str):
    """The backend's reply, or the ProtocolError its failure is (with what the failed call cost)."""
    from wfexec.backends.base import BackendError, invoke_backend

    try:
        return await invoke_backend(backend, request)
    except BackendError as exc:
        failure = _backend_failure(exc, where, timeout_source)
        failure.cost_usd = exc.cost_usd
        raise failure from None
    except ProtocolError:
        raise
    except Exception as exc:  # a backend is a program or a service: it can fail in many ways
        raise Retryable(f"{where}: the LLM backend failed: {type(exc).__name__}: {exc}") from None


def _backend_failure(exc, where: str, timeout_source: str) -> ProtocolError:
    from wfexec.backends.base import BackendTimeout, BackendUnavailable, UsageLimitReached

    if isinstance(exc, BackendUnavailable):
        return StopRun(f"{where}: the LLM backend cannot be used: {exc.message}", exc.hint)
    if isinstance(exc, UsageLimitReached):
        return UsageLimit(f"{where}: {exc.message}", "the run waits for the limit's reset time when it says one; "
                          "otherwise resume once it has passed")
    if isinstance(exc, BackendTimeout):
        return Retryable(f"{where}: {exc} (timeout from {timeout_source})", "raise the timeout, or 0 for none")
    return Retryable(f"{where}: the LLM backend failed: {exc}")  # tried again, then the agent is paused


def decide(orch: "Orchestrator", agent: "Agent", policy: Policy | None, text: str, values: dict) -> list[Transition]:
    """The transitions a reply stands for. Raises TagError (fatal) or OutputProblem (re-promptable)."""
    entry = implicit_entry(policy)
    if policy is not None and policy.force_implicit and entry is not None:
        return [_implicit(orch, agent, entry, values)]
    transitions = parse_transitions(text)
    if not transitions:
        if entry is not None:
            return [_implicit(orch, agent, entry, values)]
        raise OutputProblem("has no transition tag; a state must emit exactly one")
    resolved = check_transitions(orch, agent, transitions, script=False)
    _group_consistent(resolved, "holds")
    for written, transition in zip(transitions, resolved):
        # A cross-workflow tag's policy target is the path as written, not the state it resolves to.
        problem = check_transition(policy, written if written.tag in WORKFLOW_TAGS else transition)
        if problem:
            raise OutputProblem(f"breaks the state's policy: {problem}")
    return [replace(t, payload=t.payload.strip()) if t.tag == "result" else t for t in resolved]


def _implicit(orch: "Orchestrator", agent: "Agent", entry: dict, values: dict) -> Transition:
    transition = implicit_transition(entry)
    if "input" in transition.attributes:
        transition = replace(transition, attributes={**transition.attributes,
                                                     "input": render(transition.attributes["input"], values)})
    try:
        resolved = _resolved(orch.scope_for(agent), transition)
    except OutputProblem as exc:
        raise ProtocolError(f"{agent.id}: {agent.state}: its implicit transition {exc}",
                            "fix the target in allowed_transitions") from None
    return replace(resolved, payload=resolved.payload.strip()) if resolved.tag == "result" else resolved
