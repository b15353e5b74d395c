"""What a node type sees of a run: `StepContext`, the engine's `NodeContext` (wfexec.nodes.context).

One per run, made with it: the node it speaks for is the one the run is at (`run.current`), so a step makes no
context of its own. The calls a step makes most (`set`, `check`, `apply`, `apply_each`, `render_text`, `ask`) are the run's own
bound methods, so going through the context costs a step nothing.
"""

from __future__ import annotations

from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, NoReturn
    from wfexec.language.model import Call, Where, Workflow
    from wfexec.running.engine import Result, Run


class StepContext:
    __slots__ = ("_run", "io", "cwd", "scope", "workflow", "set", "render_text", "render", "deciding", "stand_in",
                 "check", "apply", "apply_each", "keep_error", "ask")

    def __init__(self, run: Run):
        self._run = run
        self.io = run.io
        self.cwd = run.cwd
        self.scope = run.scope
        self.workflow = run.workflow
        self.set = run.set
        self.render_text = run.render_text
        self.render = run.render
        self.deciding = run.deciding
        self.stand_in = run.stand_in
        self.check = run.check
        self.apply = run.apply
        self.apply_each = run.apply_each
        self.keep_error = run.keep_error
        self.ask = run.ask

    def __getattr__(self, name: str) -> NoReturn:
        # Only for names the context lacks: a node type written against the run it used to get says what to do.
        raise AttributeError(f"a node type's execute gets a NodeContext, not the run: it has no `{name}` (see "
                             "wfexec.nodes.context.NodeContext, and docs/guide/plugins.md)")

    @property
    def state(self) -> dict[str, Any]:
        return self._run.state

    @property
    def dry_run(self) -> bool:
        return self._run.options.dry_run

    @property
    def backend(self) -> Any:
        return self._run.options.backend  # a Temporal activity gives the run its backend after making it

    @property
    def max_steps(self) -> int:
        return self._run.options.max_steps

    def record_error(self, call: Call, failure: Any) -> str:
        return self._run.record_error(self._node(), call, failure)

    def judge_effect(self, prose: Any, reply_paths: tuple[str, ...]) -> None:
        self._run.judge_effect(self._node(), prose, reply_paths)

    def judge_document(self, doc: Path, section: str | None, context: dict, reply_paths: tuple[str, ...] = ()) -> Any:
        return self._run.judge_document(self._node(), doc, section, context, reply_paths)

    def run_subworkflow(self, workflow: Workflow, inputs: dict) -> Result:
        return self._run.run_subworkflow(self._node(), workflow, inputs)

    def count_step(self) -> bool:
        budget = self._run.budget  # shared with the run's sub-workflows and callers
        budget[0] += 1
        return budget[0] <= self._run.options.max_steps

    def node_state(self) -> dict | None:
        return self._run.node_state(self._node().id)

    def save_node_state(self, data: dict | None) -> None:
        self._run.save_node_state(self._node().id, data)

    def change_node_state(self, change: dict, whole: Callable[[], dict]) -> None:
        self._run.change_node_state(self._node().id, change, whole)

    def record_transcript(self, agent: str, record: dict) -> None:
        self._run.record_transcript(self._node().id, agent, record)

    @property
    def keeps_output(self) -> bool:
        return self._run.keeps_output

    def record_output(self, text: str) -> None:
        self._run.record_output(text)

    def fail(self, message: str, hint: str = "", where: Where | None = None) -> NoReturn:
        self._run.fail(self._run.current, message, hint, where)

    def stop(self, message: str, hint: str = "") -> NoReturn:
        self._run.stop(self._run.current, message, hint)

    def _node(self):
        node = self._run.current
        if node is None:  # a driver bug: node types run only as the step of a node
            raise RuntimeError("a node's context was used while the run is at no node")
        return node
