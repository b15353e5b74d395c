"""Running one state: a `.sh` script or an `.md` prompt, down to its resolved transitions.

Scripts (reference §1.4, §1.15): `bash FILE` in the agent's working directory,
stdin from /dev/null, an inactivity timeout, the RAYMOND_* variables. Exit
status 0 and exactly one transition on stdout (or several forks, DESIGN §4),
else a fatal error: there is no one to remind.

Prompts (reference §1.4–§1.6): the body rendered with `{{…}}` values goes to
the backend. With `allowed_transitions`, a reply with no tag, several tags,
an unknown target or a tag the policy does not allow is re-prompted with the
reminder block, up to three invocations in all; without one it is fatal. A
malformed tag is always fatal.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from wfexec.system import progress
from wfexec.protocol.agents import FORK_TAGS, refused_environment_name
from wfexec.protocol.errors import (BackendMissing, ForkGroupInvalid, ProtocolError, Retryable, StopRun, UsageLimit,
                                    WorkflowUnreachable)
from wfexec.protocol.policy import (MAX_INVOCATIONS, Policy, PolicyError, check_transition, implicit_entry, implicit_transition,
                     parse_frontmatter, reminder)
from wfexec.protocol.processes import (ProcessOutput, ProcessStartError, ProcessTimeout, run_process,
                                      run_process_blocking)
from wfexec.protocol.scopes import ResolveError, StateScope, resolve_state
from wfexec.protocol.workflows import resolve_workflow
from wfexec.protocol.tags import WORKFLOW_TAGS, PrintScanner, TagError, Transition, extract_prints, parse_transitions
from wfexec.protocol.templates import render, template_values

if TYPE_CHECKING:
    from wfexec.backends.base import LLMRequest
    from wfexec.protocol.agents import Agent
    from wfexec.protocol.orchestrator import Orchestrator

DEFAULT_TIMEOUT = 600.0
STDERR_IN_MESSAGE = 2000


@dataclass
class StepResult:
    transitions: list                     # resolved Transition objects (one, or a multi-fork group)
    kind: str                             # "script" | "markdown"
    session_id: str | None = None         # None: the session did not change
    cost_usd: float = 0.0
    record: dict = field(default_factory=dict)


class OutputProblem(Exception):
    """The output's transitions break a rule a reminder can fix (only prompts with a policy get one)."""


class ForkGroupProblem(OutputProblem):
    """Forks that do not make one multi-fork: a prompt's agent is paused for it (Raymond's item 77)."""


# -- checking transitions -------------------------------------------------------------

def _tag_list(transitions: list[Transition]) -> str:
    return ", ".join(f"<{t.tag}>" for t in transitions)


def check_transitions(orch: "Orchestrator", agent: "Agent", transitions: list[Transition], *,
                      script: bool) -> list[Transition]:
    """Resolve targets in the agent's scope; enforce 'exactly one' (or one valid multi-fork group). Raises
    OutputProblem, or WorkflowUnreachable for a cross-workflow tag whose workflow cannot be used."""
    verb = "printed" if script else "replied with"
    if len(transitions) > 1:
        _check_fork_group(transitions, verb, script)
    return [_resolved(orch.scope_for(agent), t) for t in transitions]


def _check_fork_group(transitions: list[Transition], verb: str, script: bool) -> None:
    rule = "a script must print exactly one" if script else "a state must emit exactly one"
    tags = {t.tag for t in transitions}
    forks = [t for t in transitions if t.tag in FORK_TAGS]
    gotos = [t for t in transitions if t.tag == "goto"]
    if not forks or not tags <= {*FORK_TAGS, "goto"}:
        raise (ForkGroupProblem if forks else OutputProblem)(f"{verb} {len(transitions)} transition tags ({_tag_list(transitions)}); {rule} "
                            "(several tags are allowed only as <fork>s, with at most one <goto>)")
    if len(gotos) > 1:
        raise ForkGroupProblem(f"{verb} {len(gotos)} <goto> tags beside its forks; at most one <goto> may say where "
                            "to continue")
    nexts = {f.attributes["next"] for f in forks if f.attributes.get("next")}
    if len(nexts) > 1:
        raise ForkGroupProblem(f"{verb} forks with different `next` values ({', '.join(sorted(nexts))}); all forks "
                            "must continue at the same state")
    if not nexts and not gotos:
        raise ForkGroupProblem(f"{verb} forks with no `next` and no <goto>; say where this agent continues")


def _resolved(scope: StateScope, t: Transition) -> Transition:
    """Targets, `return` and `next` as state files of `scope` (the emitting agent's); a cross-workflow tag's
    target as the other workflow's scope and first state."""
    try:
        attributes = t.attributes
        for key in ("return", "next"):
            if attributes.get(key):
                attributes = {**attributes, key: resolve_state(scope, attributes[key])}
        if t.tag in WORKFLOW_TAGS:
            try:
                where = resolve_workflow(t.target, scope)
            except ProtocolError as exc:
                raise WorkflowUnreachable(f"{t.show()}: {exc.message}", exc.hint) from None
            return replace(t, target=where.entry, attributes=attributes, scope=where.scope, abbrev=where.abbrev)
        target = resolve_state(scope, t.target) if t.tag != "result" else ""
    except ResolveError as exc:
        raise OutputProblem(f"{t.show()}: {exc.message}" + (f" ({exc.hint})" if exc.hint else "")) from None
    return replace(t, target=target, attributes=attributes)


def _group_consistent(transitions: list[Transition], verb: str) -> None:
    """After resolution: a goto beside forks must go where the forks' `next` goes."""
    nexts = {t.attributes.get("next") for t in transitions if t.tag in FORK_TAGS and t.attributes.get("next")}
    gotos = [t.target for t in transitions if t.tag == "goto"]
    if gotos and nexts and gotos[0] not in nexts:
        raise ForkGroupProblem(f"{verb} <goto>{gotos[0]}</goto> beside forks whose `next` is {nexts.pop()}; "
                            "they must agree")


# -- scripts ----------------------------------------------------------------------------

def script_env(orch: "Orchestrator", agent: "Agent") -> dict:
    """Raymond's environment: the RAYMOND_* variables (RAYMOND_INPUT whenever there is an input, empty
    included), and a worker's fork attributes in its first state."""
    env = dict(orch.base_env)
    for name in ("RAYMOND_INPUT", "RAYMOND_RESULT", "RAYMOND_STATE_DIR", "RAYMOND_STATE_FILE"):
        env.pop(name, None)  # from an outer run: never this state's
    if agent.fork_attributes:  # refused names never get here from a tag; a store written before the rule may hold them
        env.update({k: v for k, v in agent.fork_attributes.items() if not refused_environment_name(k)})
    env["RAYMOND_WORKFLOW_ID"] = orch.workflow_id
    env["RAYMOND_AGENT_ID"] = agent.id
    env["RAYMOND_TASK_FOLDER"] = orch.task_folder(agent)
    if agent.input is not None:
        env["RAYMOND_INPUT"] = agent.input
        env["RAYMOND_RESULT"] = agent.input  # the name the seed documents use
    return env


def state_timeout(orch: "Orchestrator", agent: "Agent", name: str,
                  default: float | None = DEFAULT_TIMEOUT) -> tuple[float | None, str]:
    """(seconds without output before giving up, or None; where that number comes from)."""
    per_state = orch.scope_for(agent).timeout(name)
    if per_state is not None:
        seconds, source = per_state
    elif orch.timeout is not None:
        seconds, source = orch.timeout, orch.timeout_source
    else:
        seconds, source = default, f"the default of {default:g} s" if default else "no timeout"
    return (seconds or None), source


async def run_script_state(orch: "Orchestrator", agent: "Agent") -> StepResult:
    script = _ScriptRun(orch, agent)
    try:
        output = await run_process(script.argv, cwd=script.cwd, env=script.env, timeout=script.timeout,
                                   on_stdout=script.on_stdout, on_stderr=script.on_stderr,
                                   spawn_in_thread=orch.concurrent())
    except (ProcessTimeout, ProcessStartError) as exc:
        raise script.failed(exc) from None
    return script.finished(output)


def run_script_state_blocking(orch: "Orchestrator", agent: "Agent") -> StepResult:
    """`run_script_state` without an event loop (an agent running alone)."""
    script = _ScriptRun(orch, agent)
    try:
        output = run_process_blocking(script.argv, cwd=script.cwd, env=script.env, timeout=script.timeout,
                                      on_stdout=script.on_stdout, on_stderr=script.on_stderr)
    except (ProcessTimeout, ProcessStartError) as exc:
        raise script.failed(exc) from None
    return script.finished(output)


class _ScriptRun:
    """One script state: how to start it, and what its output means."""

    def __init__(self, orch: "Orchestrator", agent: "Agent"):
        self.orch, self.agent = orch, agent
        name = agent.state
        self.where = f"{agent.id}: {name}"
        path = orch.scope_for(agent).script_path(name, orch.files)
        self.timeout, self.timeout_source = state_timeout(orch, agent, name)
        printer = orch.printer(agent)
        out_prints, err_prints = PrintScanner(), PrintScanner()
        # --trace: each line of the script's output as it comes, not once it ended
        out_lines = orch.line_tracer(agent, "stdout") if orch.io.tracing else None
        err_lines = orch.line_tracer(agent, "stderr") if orch.io.tracing else None

        def on_stdout(text: str) -> None:
            if out_lines is not None:
                out_lines(text)
            printer(out_prints.feed(text))

        def on_stderr(text: str) -> None:
            if err_lines is not None:
                err_lines(text)
            printer(err_prints.feed(text))

        self.argv = [orch.bash, str(path)]
        self.cwd, self.env = orch.agent_cwd(agent), script_env(orch, agent)
        self.on_stdout, self.on_stderr = on_stdout, on_stderr
        progress.running(f"{agent.id}: {name}")

    def failed(self, exc: ProcessTimeout | ProcessStartError) -> ProtocolError:
        if isinstance(exc, ProcessStartError):
            return ProtocolError(f"{self.where} could not start: {exc}")
        self.orch.keep_record(self.agent, "script", stdout=exc.stdout, stderr=exc.stderr, exit_code=None)
        return ProtocolError(f"{self.where} produced no output for {exc.seconds:g} s and was stopped (timeout "
                             f"from {self.timeout_source})", "make it print progress, or raise the timeout")

    def finished(self, output: ProcessOutput) -> StepResult:
        orch, agent, where = self.orch, self.agent, self.where
        record = orch.keep_record(agent, "script", stdout=output.stdout, stderr=output.stderr,
                                  exit_code=output.returncode, seconds=output.seconds)
        if output.returncode != 0:
            raise ProtocolError(f"{where} exited with status {output.returncode}; a script must exit 0"
                                + _stderr_excerpt(output.stderr))
        try:
            transitions = parse_transitions(output.stdout)
            if not transitions:
                hint = ("a tag on stderr does not count: echo it to stdout" if parse_transitions(output.stderr)
                        else "end it with e.g. echo '<result>done</result>'")
                raise ProtocolError(f"{where} printed no transition tag; a script must print exactly one", hint)
            resolved = check_transitions(orch, agent, transitions, script=True)
            _group_consistent(resolved, "printed")
        except TagError as exc:
            raise ProtocolError(f"{where}: {exc}") from None
        except OutputProblem as exc:
            raise ProtocolError(f"{where} {exc}") from None
        return StepResult(resolved, "script", record=record)


def _stderr_excerpt(stderr: str) -> str:
    text = stderr.strip()
    if not text:
        return ""
    if len(text) > STDERR_IN_MESSAGE:
        text = "…" + text[-STDERR_IN_MESSAGE:]
    return f" (stderr: {text})"


# -- prompts ------------------------------------------------------------------------------

async def run_markdown_state(orch: "Orchestrator", agent: "Agent") -> StepResult:
    from wfexec.backends.base import LLMRequest  # a run of scripts only never needs the backends

    name = agent.state
    where = f"{agent.id}: {name}"
    try:
        text = orch.scope_for(agent).read_text(name)
    except ProtocolError as exc:  # deleted or unreadable for now: tried again, then the agent is paused
        raise Retryable(f"{agent.id}: {exc.message}", exc.hint) from None
    try:
        policy, body = parse_frontmatter(text)
    except PolicyError as exc:
        raise ProtocolError(f"{where}: {exc}", "fix the frontmatter between the two `---` lines") from None
    if policy is not None and policy.unknown:
        orch.warn(f"{name}: unknown frontmatter field{'s' if len(policy.unknown) > 1 else ''} "
                  f"{', '.join(policy.unknown)} (ignored; known: allowed_transitions, model, effort, force_implicit)")
    if orch.backend is None:
        raise BackendMissing(f"{where} is an LLM state, and no LLM backend is configured",
                             "run with --backend claude (or command:PROGRAM, or --replay CASSETTE)")
    values = template_values(workflow_id=orch.workflow_id, agent_id=agent.id, task_folder=orch.task_folder(agent),
                             input=agent.input, fork_attributes=agent.fork_attributes, ask_id=agent.pending_ask_id)
    prompt = render(body, values)
    model = (policy.model if policy else None) or orch.model
    effort = (policy.effort if policy else None) or orch.effort
    # An LLM turn in JSON mode prints nothing until it is done: only a timeout someone wrote applies to it.
    timeout, _ = state_timeout(orch, agent, name, default=None)
    session = agent.session_id
    resume, branch = (agent.branch_from, True) if agent.branch_from else (session, False)
    turn_prompt, cost, problems = prompt, 0.0, []
    for attempt in range(1, MAX_INVOCATIONS + 1):
        orch.budget.check(agent.id, name)
        request = LLMRequest(prompt=turn_prompt, session_id=resume, fork_session=branch, model=model, effort=effort,
                             cwd=orch.agent_cwd(agent), agent_id=agent.id, state=name, timeout=timeout,
                             attempt=attempt)
        reply = await _invoke(orch, request, where)
        cost += reply.cost_usd
        orch.budget.add(reply.cost_usd)
        if reply.session_id:
            session = reply.session_id
        resume, branch = session, False  # reminders continue the session the failed turn produced
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


async def _invoke(orch: "Orchestrator", request: "LLMRequest", where: str):
    from wfexec.backends.base import BackendError, BackendUnavailable, UsageLimitReached, invoke_backend

    try:
        return await invoke_backend(orch.backend, request)
    except BackendUnavailable as exc:
        raise StopRun(f"{where}: the LLM backend cannot be used: {exc.message}", exc.hint) from None
    except UsageLimitReached as exc:
        raise UsageLimit(f"{where}: {exc.message}", "the run waits for the limit's reset time when it says one; "
                         "otherwise resume once it has passed") from None
    except BackendError as exc:  # tried again, then the agent is paused
        raise Retryable(f"{where}: the LLM backend failed: {exc}") from None
    except ProtocolError:
        raise
    except Exception as exc:  # a backend is a program or a service: it can fail in many ways
        raise Retryable(f"{where}: the LLM backend failed: {type(exc).__name__}: {exc}") from None


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
    _group_consistent(resolved, "replied with")
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
        (resolved,) = check_transitions(orch, agent, [transition], script=False)
    except OutputProblem as exc:
        raise ProtocolError(f"{agent.id}: {agent.state}: its implicit transition {exc}",
                            "fix the target in allowed_transitions") from None
    return replace(resolved, payload=resolved.payload.strip()) if resolved.tag == "result" else resolved


def base_environment() -> dict:
    env = dict(os.environ)
    env.pop("CLAUDECODE", None)  # a script or a nested claude must not think it runs inside Claude Code
    return env
