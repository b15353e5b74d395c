"""Running one script state down to its resolved transitions, and the transition checks every state shares
(`prompt_states` runs `.md` prompts).

Scripts (reference §1.4, §1.15): `bash FILE` in the agent's working directory,
stdin from /dev/null, an inactivity timeout, the RAYMOND_* variables. Exit
status 0 and exactly one transition on stdout (or several forks, DESIGN §4),
else a fatal error: there is no one to remind.
"""

from __future__ import annotations

import os
from wfexec.records import dataclass, field, replace

from wfexec.system import progress
from wfexec.protocol.agents import FORK_TAGS, refused_environment_name
from wfexec.protocol.errors import ProtocolError, WorkflowUnreachable
from wfexec.protocol.processes import (ProcessOutput, ProcessStartError, ProcessTimeout, run_process,
                                      run_process_blocking)
from wfexec.protocol.scopes import ResolveError, StateScope, resolve_state
from wfexec.protocol.tags import WORKFLOW_TAGS, PrintScanner, TagError, Transition, parse_transitions

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

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
    """A multi-fork (two forks, or a fork and a <goto>) that breaks a group rule: a prompt's agent is paused for
    it (Raymond's item 77)."""


# -- checking transitions -------------------------------------------------------------

def _tag_list(transitions: list[Transition]) -> str:
    return ", ".join(f"<{t.tag}>" for t in transitions)


def check_transitions(orch: "Orchestrator", agent: "Agent", transitions: list[Transition], *,
                      script: bool) -> list[Transition]:
    """Resolve targets in the agent's scope; enforce 'exactly one' (or one valid multi-fork group). Raises
    OutputProblem, or WorkflowUnreachable for a cross-workflow tag whose workflow cannot be used."""
    # Each problem reads on from "main: START.sh " (a script) or "main: START.md: the reply " (a prompt).
    verb = "printed" if script else "holds"
    if len(transitions) > 1:
        _check_fork_group(transitions, verb, script)
    scope = orch.scope_for(agent)
    resolve = _resolving_once(scope)
    try:
        return [_resolved(scope, t, resolve) for t in transitions]
    except OutputProblem as exc:
        raise OutputProblem(f"{verb} {exc}") from None


def _check_fork_group(transitions: list[Transition], verb: str, script: bool) -> None:
    rule = "a script must print exactly one" if script else "a state must emit exactly one"
    tags = {t.tag for t in transitions}
    forks = [t for t in transitions if t.tag in FORK_TAGS]
    gotos = [t for t in transitions if t.tag == "goto"]
    several = (f"{verb} {len(transitions)} transition tags ({_tag_list(transitions)}); {rule} "
               "(several tags are allowed only as <fork>s, with at most one <goto>)")
    # Raymond's test of a multi-fork: two forks, or a fork and a <goto>. Anything else is checked as one
    # transition: too many tags, which a reminder can fix (one <fork> beside a <result> is no group to pause).
    if not (len(forks) >= 2 or (forks and gotos)):
        raise OutputProblem(several)
    if not tags <= {*FORK_TAGS, "goto"}:  # a multi-fork with another tag mixed in: the agent is paused
        raise ForkGroupProblem(several)
    if len(gotos) > 1:
        raise ForkGroupProblem(f"{verb} {len(gotos)} <goto> tags beside its forks; at most one <goto> may say where "
                            "to continue")
    nexts = {f.attributes["next"] for f in forks if f.attributes.get("next")}
    if len(nexts) > 1:
        raise ForkGroupProblem(f"{verb} forks with different `next` values ({', '.join(sorted(nexts))}); all forks "
                            "must continue at the same state")
    if not nexts and not gotos:
        raise ForkGroupProblem(f"{verb} forks with no `next` and no <goto>; say where this agent continues")


def _resolving_once(scope: StateScope) -> Callable[[str], str]:
    """`resolve_state` in `scope` for the tags of one output, each name looked up once: a fork of a thousand
    workers names the same two states a thousand times, and each look-up asks the folder for up to four files."""
    found: dict[str, str] = {}

    def resolve(name: str) -> str:
        state = found.get(name)
        if state is None:
            state = found[name] = resolve_state(scope, name)
        return state

    return resolve


def _resolved(scope: StateScope, t: Transition, resolve: Callable[[str], str] | None = None) -> Transition:
    """Targets, `return` and `next` as state files of `scope` (the emitting agent's); a cross-workflow tag's
    target as the other workflow's scope and first state."""
    if resolve is None:
        resolve = _resolving_once(scope)
    try:
        attributes = t.attributes
        for key in ("return", "next"):
            if attributes.get(key):
                attributes = {**attributes, key: resolve(attributes[key])}
        if t.tag in WORKFLOW_TAGS:
            from wfexec.protocol.workflows import resolve_workflow  # a cross-workflow tag only

            try:
                where = resolve_workflow(t.target, scope)
            except ProtocolError as exc:
                raise WorkflowUnreachable(f"{t.show()}: {exc.message}", exc.hint) from None
            return replace(t, target=where.entry, attributes=attributes, scope=where.scope, abbrev=where.abbrev)
        target = resolve(t.target) if t.tag != "result" else ""
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
        # --trace and a durable run's kept output: each line of the script's output as it comes, not once it ended
        out_lines = orch.line_tracer(agent, "stdout")
        err_lines = orch.line_tracer(agent, "stderr")

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
        self.orch.keep_record(self.agent, "script", stdout=exc.stdout, stderr=exc.stderr, exit_code=None,
                              env=self.env)
        return ProtocolError(f"{self.where} produced no output for {exc.seconds:g} s and was stopped (timeout "
                             f"from {self.timeout_source})", "make it print progress, or raise the timeout")

    def finished(self, output: ProcessOutput) -> StepResult:
        orch, agent, where = self.orch, self.agent, self.where
        record = orch.keep_record(agent, "script", stdout=output.stdout, stderr=output.stderr,
                                  exit_code=output.returncode, seconds=output.seconds, env=self.env)
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


def base_environment() -> dict:
    env = dict(os.environ)
    env.pop("CLAUDECODE", None)  # a script or a nested claude must not think it runs inside Claude Code
    return env
