"""Agents, their return stacks, and what each transition does to them (reference §1.10–§1.13).

| tag | state | session | stack | cwd | `{{input}}` next |
|---|---|---|---|---|---|
| goto T | T | kept | kept | kept | `input` attribute |
| reset T | T | fresh | kept | `cd` applied | `input` attribute |
| call T return=R | T | branched from the caller's on the first LLM turn | push | kept | `input` attribute |
| function T return=R | T | fresh | push | kept | `input` attribute |
| fork W next=N | parent → N | parent keeps | parent keeps | parent keeps | worker: `input` |
| result P | pop → frame state, or the agent ends | frame's | pop | frame's | P |
| ask N (question) | kept, the agent `asking`; once answered: N | kept | kept | kept | the answer |

Each agent also has a task folder (`{{task_folder}}`, `RAYMOND_TASK_FOLDER`): its own id's, a new one after
`<reset task="new">`, its parent's after `<fork task="inherit">`; a frame keeps the caller's, restored by the
callee's `<result>` (its own default folder included).

Everything here is plain data (dataclasses with `to_dict`/`from_dict`) so that a
durable run can store the agents, their stacks, sessions and fork counters and
pick them up again. Transitions are pure: `apply` returns new agents and never
changes the one it was given (it only advances the shared fork counters).

Attributes a tag does not take are ignored, as Raymond's transition handlers
ignore them (`ray lint` and `wfexec validate` report the `task` and `<ask cd>`
ones): `cd` on goto, call, function, result or ask; `task` on anything but
reset, fork and their -workflow forms; a `task` other than `new` (a reset's
new folder) or `inherit` (a fork's shared one); a `<goto>`'s `cd` and `input`
beside forks (the parent continues with no input, as in Raymond's multi-fork).
Only `cd` on `<call-workflow>` is refused (it pauses the agent), as in Raymond.

Deliberate differences from Raymond (DESIGN §4): one fork counter per parent
for every fork; fork attributes and the pending branch of a `<call>` are
stored with the agent (a crash cannot lose them), and that branch marker lasts
until an LLM turn uses it, so a script callee followed by a prompt still gets a
branched session, never the caller's own.
"""

from __future__ import annotations

import os
import time
from wfexec.records import dataclass, field, fields, replace

from wfexec.protocol.errors import ProtocolError
from wfexec.protocol.tags import WORKFLOW_TAGS, Transition
from wfexec.system.patterns import lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Sequence

MAIN = "main"
# `branch_from` of the main agent launched with --continue-session: its first LLM turn branches the latest session
# of the folder it runs in (claude `-c --fork-session`), not a session it knows the id of.
CONTINUE_LATEST = "@latest"
FORK_TAGS = ("fork", "fork-workflow")
MAX_DEPTH = 4  # nested call-workflow / function-workflow calls, as in Raymond
# Attributes a fork consumes itself; every other one reaches the worker's first state.
FORK_OWN_ATTRIBUTES = ("next", "cd", "input", "task")

# A fork's other attributes become environment variables of the worker's
# scripts. Tags come from an LLM or a script's output, so a name that changes
# how a program starts or which program runs (`BASH_ENV` runs a file before
# every bash script; `PATH` swaps `ls`) is refused: a tag may pass data, not code.
ENVIRONMENT_NAMES_REFUSED = frozenset({
    "PATH", "ENV", "BASH_ENV", "IFS", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "CDPATH", "GLOBIGNORE",
    "HOME", "SHELL", "TMPDIR", "GCONV_PATH", "HOSTALIASES", "LOCPATH", "NLSPATH", "MALLOC_CHECK_",
    "NODE_OPTIONS", "NODE_PATH", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH",
    "PERLLIB", "EDITOR", "VISUAL", "PAGER", "LESSOPEN", "LESSCLOSE", "SSH_ASKPASS", "SUDO_ASKPASS",
    "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CONFIG_DIRS", "XDG_DATA_DIRS", "ZDOTDIR", "INPUTRC",
    "OPENSSL_CONF", "CURL_HOME", "WGETRC", "NPM_CONFIG_PREFIX", "PIP_CONFIG_FILE", "GEM_HOME", "GEM_PATH",
})
ENVIRONMENT_PREFIXES_REFUSED = ("LD_", "DYLD_", "PYTHON", "PERL5", "RUBY", "BASH_FUNC_", "GIT_", "NPM_CONFIG_",
                                "RAYMOND_", "WFEXEC_", "CLAUDE", "ANTHROPIC_")
_ENVIRONMENT_NAME = lazy(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def refused_environment_name(name: str) -> bool:
    """True for a fork attribute that must not become an environment variable (see ENVIRONMENT_NAMES_REFUSED)."""
    return (not _ENVIRONMENT_NAME.match(name) or name in ENVIRONMENT_NAMES_REFUSED
            or name.startswith(ENVIRONMENT_PREFIXES_REFUSED))


@dataclass
class Frame:
    state: str                      # the resolved return state
    session_id: str | None = None   # the caller's session, resumed on return
    cwd: str = ""                   # the caller's working directory ("" = the node's)
    task: str = ""                  # the caller's task folder ("" = its own id's)
    scope: str = ""                 # the caller's states folder ("" = the node's)
    depth: int = 0                  # the caller's cross-workflow nesting depth

    @classmethod
    def from_dict(cls, data: dict) -> "Frame":
        return cls(state=data["state"], session_id=data.get("session_id"), cwd=data.get("cwd", ""),
                   task=data.get("task", ""), scope=data.get("scope", ""), depth=data.get("depth", 0))


@dataclass
class Agent:
    id: str
    state: str                                  # the resolved state file it runs next
    session_id: str | None = None               # the LLM session a goto resumes
    stack: list = field(default_factory=list)   # of Frame
    cwd: str = ""                               # "" = the node's working directory
    input: str | None = None                    # `{{input}}` / RAYMOND_INPUT of the next state only
    fork_attributes: dict | None = None         # a worker's first state only
    branch_from: str | None = None              # a <call>'s caller session, branched on the next LLM turn
    status: str = "active"                      # active | ended | asking | paused
    result: str | None = None                   # the payload of its final <result>
    # An <ask>: the question, the state the answer goes to, and its id ({{ask_id}} of that state).
    ask_prompt: str | None = None
    ask_next: str | None = None
    ask_id: str | None = None
    pending_ask_id: str | None = None           # {{ask_id}} of the state that got the answer, that state only
    retries: int = 0                            # failed attempts at its current state in a row
    error: str | None = None                    # why it is paused
    steps: int = 0                              # states it has run
    # Its task folder, named under the run's task root ("" = its own id); `<reset task="new">` counts up
    # and moves it to `<id>_task<N>`, `<fork task="inherit">` shares the parent's.
    task: str = ""
    task_count: int = 0
    # The states folder it runs in ("" = the node's), changed by the cross-workflow tags, and how many
    # call-workflow / function-workflow calls deep it is.
    scope: str = ""
    depth: int = 0

    @property
    def task_name(self) -> str:
        return self.task or self.id

    def to_dict(self) -> dict:
        # Field by field, not dataclasses.asdict: that deep-copies every value, and a checkpoint encodes the
        # agents that moved at every state.
        data = {name: getattr(self, name) for name in _AGENT_FIELDS}
        data["stack"] = [dict(vars(frame)) for frame in self.stack]
        if self.fork_attributes is not None:
            data["fork_attributes"] = dict(self.fork_attributes)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "Agent":
        values = {k: v for k, v in data.items() if k in _AGENT_FIELDS}
        values["stack"] = [Frame.from_dict(f) for f in data.get("stack") or []]
        return cls(**values)


_AGENT_FIELDS = tuple(spec.name for spec in fields(Agent))


@dataclass
class AgentsState:
    """Everything a states node knows between two steps; what a durable run stores.

    Saved whole (`to_dict`) or as the change since the last save (`take_change`), which costs what changed, not
    what there is: with a thousand forked agents, one agent's state changes one agent. Both are mappings of the
    same keys, and a change is merged into the whole key by key, one level deep (wfexec.durable.store's
    `merge_change`): `agents` (id → agent), `fork_counters` (parent id → forks so far) and `ended` (id → its place
    in the order agents ended) take the entries given; the other keys are replaced."""

    workflow_id: str
    agents: list = field(default_factory=list)          # of Agent, active and ended
    fork_counters: dict = field(default_factory=dict)   # parent id → forks so far
    total_cost_usd: float = 0.0
    budget_usd: float | None = None
    # Agent ids in the order they ended: the forks' results are reported so, a resumed run's included.
    ended: list = field(default_factory=list)
    # Where each agent is in `agents`; the agents put since the last take_change, and how many had ended then.
    _index: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    _changed: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    _ended_taken: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._index = {agent.id: index for index, agent in enumerate(self.agents)}
        self._ended_taken = len(self.ended)

    def _position(self, agent_id: str) -> int | None:
        index = self._index.get(agent_id)
        if index is None and len(self._index) == len(self.agents):
            return None  # a new agent (a worker just forked): not a reason to index them all again
        if index is None or index >= len(self.agents) or self.agents[index].id != agent_id:
            self.__post_init__()  # `agents` was changed from outside: index it again
            index = self._index.get(agent_id)
        return index

    def agent(self, agent_id: str) -> Agent:
        index = self._position(agent_id)
        if index is None:
            raise KeyError(agent_id)
        return self.agents[index]

    def put(self, agent: Agent) -> None:
        index = self._position(agent.id)
        if index is None:
            self._index[agent.id] = len(self.agents)
            self.agents.append(agent)
        else:
            self.agents[index] = agent
        self._changed[agent.id] = agent

    def active(self) -> list[Agent]:
        return [a for a in self.agents if a.status == "active"]

    def to_dict(self) -> dict:
        return {"workflow_id": self.workflow_id, "agents": {a.id: a.to_dict() for a in self.agents},
                "fork_counters": dict(self.fork_counters), "total_cost_usd": self.total_cost_usd,
                "budget_usd": self.budget_usd, "ended": {agent_id: i for i, agent_id in enumerate(self.ended)}}

    def take_change(self) -> dict:
        """What changed since the last call (the first: since the state was made or read), as a change to merge
        into the whole saved before: the agents put since, their fork counters, the ids that ended since, the
        cost. Its size is the change's."""
        changed, self._changed = self._changed, {}
        taken, self._ended_taken = self._ended_taken, len(self.ended)
        change: dict[str, Any] = {"total_cost_usd": self.total_cost_usd}
        if changed:
            change["agents"] = {agent_id: agent.to_dict() for agent_id, agent in changed.items()}
            counters = {agent_id: self.fork_counters[agent_id] for agent_id in changed
                        if agent_id in self.fork_counters}
            if counters:
                change["fork_counters"] = counters
        if taken < len(self.ended):
            change["ended"] = {agent_id: i for i, agent_id in enumerate(self.ended[taken:], start=taken)}
        return change

    @classmethod
    def from_dict(cls, data: dict) -> "AgentsState":
        listed = data.get("agents") or []
        # Saved before agents were keyed by id, they were a list.
        agents = [Agent.from_dict(a) for a in (listed.values() if isinstance(listed, dict) else listed)]
        ended = data.get("ended")
        if ended is None:  # saved before the order was kept: the order they are listed in
            ended = [a.id for a in agents if a.status == "ended"]
        elif isinstance(ended, dict):
            ended = sorted(ended, key=ended.__getitem__)
        return cls(workflow_id=data["workflow_id"], agents=agents, fork_counters=dict(data.get("fork_counters") or {}),
                   total_cost_usd=float(data.get("total_cost_usd") or 0.0), budget_usd=data.get("budget_usd"),
                   ended=list(ended))


def worker_id(parent: str, target: str, counters: dict) -> str:
    """`{parent}_{abbrev}{n}`: abbrev = the target's stem, lower-cased, first 6 characters; n counts per parent."""
    counters[parent] = counters.get(parent, 0) + 1
    stem = os.path.splitext(target)[0] if os.path.splitext(target)[1] else target
    return f"{parent}_{stem.lower()[:6]}{counters[parent]}"


def resolve_cd(cd: str, agent_cwd: str, base_cwd: str) -> str:
    """An absolute `cd` is used as is; a relative one is joined to the agent's (or the node's) directory."""
    cd = os.path.expanduser(cd)
    if os.path.isabs(cd):
        return os.path.normpath(cd)
    return os.path.normpath(os.path.join(agent_cwd or base_cwd, cd))


def _input(transition: Transition) -> str | None:
    value = transition.attributes.get("input")
    return value if value else None


def apply(agent: Agent, transitions: Sequence[Transition], counters: dict, base_cwd: str) -> tuple[Agent, list[Agent]]:
    """The agent after its state emitted `transitions` (resolved), plus any workers it forked.

    Several transitions are a multi-fork (validated by the caller): every fork
    makes a worker, and the parent continues like a goto to the shared `next`.
    """
    if len(transitions) == 1:
        return apply_one(agent, transitions[0], counters, base_cwd)
    # In a group, a <goto> may be the continuation, so a fork there needs no `next` of its own.
    # The parent continues like Raymond's multi-fork: at the shared continuation, with no input (a <goto>'s `input`
    # and `cd` there are ignored).
    workers = [_worker(agent, t, counters, base_cwd) for t in transitions if t.tag in FORK_TAGS]
    goto = next((t for t in transitions if t.tag == "goto"), None)
    continuation = goto.target if goto else next(t.attributes["next"] for t in transitions
                                                 if t.tag in FORK_TAGS and t.attributes.get("next"))
    return _moved(agent, continuation), workers


def _moved(agent: Agent, state: str, **changes) -> Agent:
    """A copy at `state`, with the one-state fields (input, fork attributes, the answered ask's id) cleared."""
    stack = changes.pop("stack", None)
    return replace(agent, state=state, stack=list(agent.stack) if stack is None else stack,
                   input=changes.pop("input", None), fork_attributes=None, pending_ask_id=None, retries=0, **changes)


def answered(agent: Agent, answer: str) -> Agent:
    """An asking agent once a person answered: at its ask's `next`, with the answer as `{{input}}`."""
    assert agent.status == "asking" and agent.ask_next is not None
    return replace(agent, status="active", state=agent.ask_next, input=answer, pending_ask_id=agent.ask_id,
                   ask_prompt=None, ask_next=None, ask_id=None, fork_attributes=None, retries=0)


def paused(agent: Agent, error: str) -> Agent:
    """The agent stops where it is until the run is resumed (its state runs again then)."""
    return replace(agent, status="paused", error=error)


def reactivated(agent: Agent) -> Agent:
    """A paused agent on resume: active again, its count of failures started afresh."""
    return replace(agent, status="active", error=None, retries=0) if agent.status == "paused" else agent


def apply_one(agent: Agent, t: Transition, counters: dict, base_cwd: str) -> tuple[Agent, list[Agent]]:
    """One transition. An attribute the tag does not take (`cd` on a goto, `task` on a call, …) is ignored, as Raymond
    ignores it."""
    tag = t.tag
    if tag == "goto":
        return _moved(agent, t.target, input=_input(t)), []
    if tag == "ask":
        # Where it is, session and stack kept, until the answer comes (`answered`).
        return replace(agent, status="asking", ask_prompt=t.payload.strip(), ask_next=t.target,
                       ask_id=f"ask_{agent.id}_{time.time_ns()}", input=None, fork_attributes=None,
                       pending_ask_id=None, retries=0), []
    if tag == "reset":
        cwd = resolve_cd(t.attributes["cd"], agent.cwd, base_cwd) if t.attributes.get("cd") else agent.cwd
        return _moved(agent, t.target, input=_input(t), session_id=None, branch_from=None, cwd=cwd,
                      **_new_folder(agent, t)), []
    if tag in WORKFLOW_TAGS:
        return _cross_workflow(agent, t, counters, base_cwd)
    if tag in ("call", "function"):
        frame = Frame(state=_required(t, "return"), session_id=agent.session_id, cwd=agent.cwd, task=agent.task,
                      scope=agent.scope, depth=agent.depth)
        moved = _moved(agent, t.target, input=_input(t), session_id=None,
                       branch_from=agent.session_id if tag == "call" else None)
        moved.stack.append(frame)
        return moved, []
    if tag == "fork":
        continuation = _required(t, "next")
        return _moved(agent, continuation), [_worker(agent, t, counters, base_cwd)]
    if tag == "result":
        if not agent.stack:
            return _moved(agent, agent.state, status="ended", result=t.payload, branch_from=None), []
        frame = agent.stack[-1]
        # The caller's cwd and task folder come back whatever the callee did with them, its own default ones
        # ("") included: a callee's <reset task="new" cd=...> stays the callee's.
        moved = _moved(agent, frame.state, input=t.payload, session_id=frame.session_id, branch_from=None,
                       cwd=frame.cwd, task=frame.task, scope=frame.scope, depth=frame.depth)
        moved.stack.pop()
        return moved, []
    raise ProtocolError(f"<{tag}> is not a transition wfexec knows")


def _cross_workflow(agent: Agent, t: Transition, counters: dict, base_cwd: str) -> tuple[Agent, list[Agent]]:
    """The four `-workflow` tags: like reset, call, function and fork, into another states folder (t.scope,
    starting at t.target). Raymond's ProtocolErrors here pause the agent instead of ending the run."""
    tag = t.tag
    if tag == "fork-workflow":
        return _moved(agent, _required(t, "next")), [_worker(agent, t, counters, base_cwd)]
    if tag == "reset-workflow":
        cwd = resolve_cd(t.attributes["cd"], agent.cwd, base_cwd) if t.attributes.get("cd") else agent.cwd
        return _moved(agent, t.target, input=_input(t), session_id=None, branch_from=None, cwd=cwd, scope=t.scope,
                      depth=0, stack=[], **_new_folder(agent, t)), []
    if tag == "call-workflow" and "cd" in t.attributes:
        raise ProtocolError("<call-workflow> takes no `cd`: the called workflow continues the caller's session, "
                            "which belongs to its directory", "use <function-workflow cd=...> for a fresh session")
    if agent.depth >= MAX_DEPTH:
        raise ProtocolError(f"<{tag}> would nest workflows more than {MAX_DEPTH} deep",
                            "return from a called workflow before calling another, or use <reset-workflow>")
    frame = Frame(state=_required(t, "return"), session_id=agent.session_id, cwd=agent.cwd, task=agent.task,
                  scope=agent.scope, depth=agent.depth)
    cwd = resolve_cd(t.attributes["cd"], agent.cwd, base_cwd) if t.attributes.get("cd") else agent.cwd
    moved = _moved(agent, t.target, input=_input(t), session_id=None, cwd=cwd, scope=t.scope, depth=agent.depth + 1,
                   branch_from=agent.session_id if tag == "call-workflow" else None)
    moved.stack.append(frame)
    return moved, []


def _new_folder(agent: Agent, t: Transition) -> dict:
    """A reset's task folder: a new one for `task="new"`; any other `task` (`inherit` included) keeps it, as in
    Raymond (lint reports the others)."""
    if t.attributes.get("task") != "new":
        return {}
    return {"task_count": agent.task_count + 1, "task": f"{agent.id}_task{agent.task_count + 1}"}


def _required(t: Transition, name: str) -> str:
    value = t.attributes.get(name)
    if not value:
        example = {"return": '<call return="AFTER">CHILD</call>', "next": '<fork next="CONTINUE">WORKER</fork>'}
        raise ProtocolError(f"<{t.tag}> needs a `{name}` attribute", f"write it quoted, e.g. {example[name]}")
    return value


def _worker(parent: Agent, t: Transition, counters: dict, base_cwd: str) -> Agent:
    attributes = {k: v for k, v in t.attributes.items() if k not in FORK_OWN_ATTRIBUTES}
    refused = sorted(name for name in attributes if refused_environment_name(name))
    if refused:
        raise ProtocolError(
            f"<fork> attribute{'s' if len(refused) > 1 else ''} {', '.join(refused)} would change how the worker's "
            "programs start, and fork attributes become its environment variables",
            "pass data under another name (e.g. TARGET_DIR=...); PATH, BASH_ENV, ENV, LD_*, PYTHON*, GIT_* and the "
            "like are never taken from a tag")
    # `task="inherit"` shares the parent's folder; none, `new` or any other value gives the worker its own.
    task = parent.task_name if t.attributes.get("task") == "inherit" else ""
    if t.tag == "fork-workflow":  # a workflow of its own, in the caller's directory unless `cd` says otherwise
        cwd = resolve_cd(t.attributes["cd"], parent.cwd, base_cwd) if t.attributes.get("cd") else parent.cwd
        counters[parent.id] = counters.get(parent.id, 0) + 1
        return Agent(id=f"{parent.id}_{t.abbrev}{counters[parent.id]}", state=t.target, cwd=cwd, input=_input(t),
                     task=task, scope=t.scope, depth=parent.depth)
    # Raymond's worker starts where the run started, unless the fork says `cd` (an empty one: the parent's directory).
    cwd = resolve_cd(t.attributes["cd"], parent.cwd, base_cwd) if "cd" in t.attributes else ""
    return Agent(id=worker_id(parent.id, t.target, counters), state=t.target, cwd=cwd, input=_input(t),
                 fork_attributes=attributes or None, task=task, scope=parent.scope, depth=parent.depth)


def describe(agents: Sequence[Agent]) -> list[dict[str, Any]]:
    return [a.to_dict() for a in agents]
