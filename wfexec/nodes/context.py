"""What a node type sees of the run it is a step of (`NodeContext`), and the hook of a node whose work is agents
(`AgentSteps`).

A node type's `execute(node, ctx)` reads and writes state, calls its preconditions and consequences, asks, hands
judgement to the LLM, and ends the run early, all through `ctx`; the step loop, its budget, the journal and the
driver stay the engine's. The engine gives each run one context (`wfexec.running.node_context.StepContext`); the
node it speaks for is the one being run.
"""

from __future__ import annotations

from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only
    from typing import Any, Callable, NoReturn, Protocol
    from wfexec.language.expressions import Scope
    from wfexec.language.model import Call, Node, Where, Workflow
    from wfexec.interfaces import Output as Io
    from wfexec.interfaces import SubRunResult as Result
    from wfexec.nodes.base import Answer, Outcome, Question
else:  # protocols speak to mypy only: at run time they are plain classes, and typing is not imported
    Protocol = object


class NodeContext(Protocol):
    """What a node type may use of the run, while one of its nodes runs."""

    io: Io                      # printing and tracing (a node never asks through it: `ask` does)
    cwd: Path                   # the run's working directory
    scope: Scope                # what templates and expressions read: the state and the run's names
    workflow: Workflow          # the compiled workflow (read only): `workflow.reply_paths` and the like

    @property
    def dry_run(self) -> bool:
        """--dry-run: print what would run, run nothing with effects."""

    @property
    def backend(self) -> Any:
        """The run's LLM backend (--backend), or None."""

    @property
    def state(self) -> dict[str, Any]:
        """The run's state, to read (write with `set`, so the journal sees it)."""

    @property
    def max_steps(self) -> int:
        """The run's step budget (--max-steps)."""

    def set(self, path: tuple, value: Any) -> None:
        """Set a state path (a bad path fails the run at the node)."""

    def render_text(self, value: Any) -> str:
        """A compiled value rendered as text (an expression error fails the run at the node)."""

    def render(self, value: Any, scope: Scope | None = None) -> Any:
        """A compiled value rendered, a bare expression evaluated (ExpressionError: one failed); in a dry run, each
        `${...}` that reads a value the dry run did not compute stands as a placeholder."""

    def deciding(self, what: str, value: Any = None, path: tuple | None = None) -> None:
        """In a dry run, stop the run (exit 4) when `value`, or the state at `path` (or above it), holds a value the
        dry run did not compute: `what` (a question's options, a route) cannot be decided without it."""

    def stand_in(self, path: tuple, what: str) -> None:
        """In a dry run, leave the placeholder `<dry-run: PATH>` at the state path `path`, for what the node, not run,
        would have stored there (`what` names it in the message of a step that then needs it); nothing in a real
        run."""

    def check(self, call: Call, scope: Scope | None = None) -> bool:
        """Evaluate a precondition."""

    def apply(self, call: Call, scope: Scope | None = None) -> None:
        """Run a consequence (ActionFailed: it failed)."""

    def apply_each(self, calls: tuple[Call, ...]) -> tuple[int, Any] | None:
        """Run consequences in order, up to the first that fails: (its index, its ActionFailed), or None when all
        ran. What `apply` in a loop does, cheaper."""

    def keep_error(self, message: str, hint: str = "") -> None:
        """Put a failure where endings and later nodes read it (`computed.last_error`)."""

    def record_error(self, call: Call, failure: Any) -> str:
        """Keep a failed action's message (and how to fix it); returns the message."""

    def ask(self, question: Question) -> Answer:
        """The answer to a question (given, asked at the terminal, or the run parks here: ask before changing
        state, since a parked step runs again from its start)."""

    def judge_effect(self, prose: Any, reply_paths: tuple[str, ...]) -> None:
        """The node's work written as prose, done by the LLM; the values it gives for `reply_paths` are set."""

    def judge_document(self, doc: Path, section: str | None, context: dict,
                       reply_paths: tuple[str, ...] = ()) -> Any:
        """A document sent to the LLM: its reply, or, given `reply_paths`, the values it gives set there."""

    def run_subworkflow(self, workflow: Workflow, inputs: dict) -> Result:
        """A sub-workflow run to its ending in a state of its own, sharing this run's step budget."""

    def count_step(self) -> bool:
        """One more step of the node's own (an agent state) against the run's step budget: False once over it."""

    def node_state(self) -> dict | None:
        """What the node kept to continue after a crash (`save_node_state`), or None."""

    def save_node_state(self, data: dict | None) -> None:
        """Keep what the node needs to continue after a crash (None: the node is done)."""

    def change_node_state(self, change: dict, whole: Callable[[], dict]) -> None:
        """Keep what changed of the node's kept state (merged key by key); `whole()` gives all of it."""

    def record_transcript(self, agent: str, record: dict) -> None:
        """Keep what one agent state sent and got, for `wfexec show RUN --agent NAME`."""

    @property
    def keeps_output(self) -> bool:
        """Whether the run's store keeps what the node's programs write (`record_output`): skip making it if not."""

    def record_output(self, text: str) -> None:
        """Keep what the node's programs wrote, for `wfexec show RUN --output` and `wfexec serve`."""

    def fail(self, message: str, hint: str = "", where: Where | None = None) -> NoReturn:
        """End the run with an error at the node (exit 1)."""

    def stop(self, message: str, hint: str = "") -> NoReturn:
        """Stop the run at the node (exit 4): a budget, a missing backend, paused agents."""


class AgentSteps(Protocol):
    """A node whose work is agents' states that may each run on another worker (a `states` node): how a runner
    that keeps the agents itself goes through it, one agent state at a time (the Temporal workflow code).
    `begin`, `question`, `end` and `failed` read and write the run's state only (deterministic); `step` runs one
    state (the part with effects)."""

    def begin(self, node: Node, ctx: NodeContext) -> dict:
        """What every state of the node needs, and how its agents loop runs: {input, cwd, budget_usd, on_ask,
        no_wait} (wfexec.protocol.agents_loop)."""

    def step(self, node: Node, ctx: NodeContext, meta: dict, agent: dict | None) -> dict:
        """With no agent: {agent: the first one}. Else one state of `agent`, as data (Orchestrator.step_one).
        Fatal errors raise (ProtocolError; StopRun stops the run)."""

    def count(self, node: Node, ctx: NodeContext) -> Callable[[Any], None]:
        """count(agent), called as each agent state starts: the run's step budget."""

    def question(self, node: Node, agent: Any) -> Question:
        """What an agent's `<ask>` asks a person."""

    def end(self, node: Node, ctx: NodeContext, outcome: Any) -> Outcome:
        """The node's outcome once no agent is active (StatesOutcome): stored and routed, or the run stopped."""

    def failed(self, node: Node, ctx: NodeContext, error: Any, stop: bool, routable: bool) -> Outcome:
        """A fatal error of one agent's state: routed to on_failure, or the run stops or fails with it."""
