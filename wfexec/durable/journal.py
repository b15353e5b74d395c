"""Durable runs: every step journaled in the store, and resume after any stop.

When steps are committed:
- before a step with outside effects (files, processes, network, git, an LLM)
  starts, everything before it is committed and the step is marked in flight;
  its journal row is committed as soon as it ends. So an outside effect is
  never repeated for a step that completed, and the one step in flight when
  the process died is the only one resume may run again (it asks first when
  the step is not idempotent);
- with `Options.commit_every_step`, every step that changed state is committed
  before the next one starts; a step that changed nothing (a conditional)
  goes with the next commit, since running it again gives the same result;
- otherwise steps that only change state are committed in batches (every
  `FLUSH_STEPS` steps or `FLUSH_SECONDS`, and before any effect, question or
  stop). If the process dies between two batches, resume re-runs those steps
  from the last snapshot: they read and write only state, so running them
  again gives the same state and nobody outside can tell. This is what lets a
  durable run go at close to in-memory speed.
"""

from __future__ import annotations

import json
import time
from wfexec.records import dataclass, field, replace
from pathlib import Path

from wfexec.running.engine import EntryGateFailed, InternalError, Journal, Options, Run, RunError, RunStopped
from wfexec.language.model import Node, Workflow
from wfexec.nodes.base import Question
from wfexec.running.prompts import AnswerRefused, Answers, NeedsAnswer, check_answer_keys, match_answer
from wfexec.running import steploop
from wfexec.running.steploop import HISTORY_WINDOW
from wfexec.durable.changes import record as record_changes
from wfexec.durable.store import FINISHED, Replayed, Store, StoreError, StoreWriteError, ending_status
from wfexec.interfaces import EFFECTS
from wfexec.system import subprocesses
from wfexec.system.digest import sha256

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

OUTSIDE_EFFECTS = frozenset(EFFECTS) - {"display"}  # what a crash may leave half done
FLUSH_STEPS = 1024
FLUSH_SECONDS = 0.5
__all__ = ["HISTORY_WINDOW"]  # the run's window of history (the step loop's); the journal keeps every step


# One encoder for every row: json.dumps with options builds a new one per call.
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode
_IMMUTABLE = frozenset({str, int, float, bool, type(None)})
_clock_ns = time.perf_counter_ns
_NO_CHANGES: dict = {}  # shared: rows are encoded, never changed
# A full snapshot of the state is written once the journal rows since the last one add up to its size (and
# to at least this much): a commit then costs what the step changed, whatever the state's size, resume
# replays at most about a snapshot's worth of changes, and the snapshots cost at most as much as the rows.
SNAPSHOT_MIN_BYTES = 64 * 1024


def node_hashes(workflow: Workflow) -> dict[str, str]:
    """A fingerprint of each node and ending as written, and of the files it names (its scripts, states folder,
    documents), to tell what changed between two versions."""
    out = {}
    for section in ("nodes", "endings"):
        for node_id, raw in (workflow.raw.get(section) or {}).items():
            digest = sha256(_dumps({"section": section, "raw": raw}).encode())
            for path in workflow.documents.get(f"{section}.{node_id}", ()):
                _hash_files(digest, path)
            out[f"{section}.{node_id}"] = digest.hexdigest()[:16]
    return out


def _hash_files(digest, path: Path) -> None:
    """Names and contents of a file, or of every file under a folder, in a stable order."""
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        digest.update(str(file.relative_to(path) if file != path else file.name).encode() + b"\0")
        try:
            digest.update(sha256(file.read_bytes()).digest())
        except OSError:  # unreadable now: the run will say so when it gets there
            digest.update(b"?")


def has_outside_effects(workflow: Workflow, node: Node) -> bool:
    """Whether the node touches the world: by its node type's own work, or by a registry call it makes."""
    if OUTSIDE_EFFECTS.intersection(node.kind.effects(node.spec)):
        return True
    return any(OUTSIDE_EFFECTS & set(call.spec.effects) for call in workflow.node_calls(node))


def is_idempotent(workflow: Workflow, node: Node) -> bool:
    """Whether running the node again after a crash is harmless (declared on the node, else by its types)."""
    if node.idempotent is not None:
        return node.idempotent
    return node.kind.idempotent(node.spec) and all(call.spec.idempotent for call in workflow.node_calls(node))


def state_for_snapshot(state: dict) -> dict:
    return {k: v for k, v in state.items() if k != "history"}


class DurableJournal(Journal):
    """Journals each step; commits per the policy in this module's docstring.

    Between commits it keeps each step's history entry (the step loop keeps
    only a window of them in `state["history"]`), changes and duration.
    """

    def __init__(self, store: Store, run_id: str, workflow: Workflow, steps_done: int, answers: Answers,
                 replayed: Replayed | None = None):
        self.store = store
        # The answers given up front, as last kept in the store: a step that takes one commits what is left.
        self.answers = answers
        self.answers_kept = answers.version
        self.run_id = run_id
        self.step = steps_done
        self.pending: list[list] = []  # the row of each step journaled since the last commit (store.commit_steps)
        # Bytes of the last snapshot, and of the journal rows written since (see SNAPSHOT_MIN_BYTES).
        self.snapshot_bytes = replayed.snapshot_bytes if replayed else 0
        self.since_snapshot = replayed.replayed_bytes if replayed else 0
        self.snapshot_due = max(SNAPSHOT_MIN_BYTES, self.snapshot_bytes)  # of since_snapshot
        self.last_flush = time.monotonic()
        self.started = 0
        # Nodes whose saved state is cleared with the next commit: in the transaction that journals the node's
        # step, so a kill between the two can neither lose the step nor re-run a states node's finished agents.
        self.cleared_nodes: set[str] = set()
        self.outside = {node_id for node_id, node in workflow.nodes.items() if has_outside_effects(workflow, node)}
        self.output: Any = None  # an OutputKeeper, once a program of the run wrote something

    def before_step(self, run: Run, node: Node) -> None:
        if node.id in self.outside:
            self.flush(run, node.id)
            # The step's clock (what its expressions read as Date.now()) is its recorded start.
            self.store.mark_in_flight(self.run_id, self.step + 1, node.id, started_at=run.started_ms() / 1000)
        self.started = _clock_ns()

    def after_step(self, run: Run, node: Node, entry: dict) -> None:
        # Whole microseconds: an int encodes several times faster than a float.
        duration_us = (_clock_ns() - self.started) // 1000
        step = self.step = self.step + 1
        changed, appended = run.changed, run.appended
        pending = self.pending
        if changed or appended:
            sets, appends, removed = record_changes(run.state, changed, appended)
            changed.clear()
            appended.clear()
            row = [step, entry["node"], entry["type"], entry["outcome"], entry["target"], entry["at"], sets,
                   duration_us]
            if appends or removed:
                row += (appends, removed)
            pending.append(row)
            if run.options.commit_every_step:
                self.flush(run, entry["target"])
                return
        else:
            pending.append([step, entry["node"], entry["type"], entry["outcome"], entry["target"], entry["at"],
                            _NO_CHANGES, duration_us])
        count = len(pending)
        # Committing every step, a step that changed nothing and touched nothing outside (a conditional) is
        # committed with the next one: resume would run it again with the same result.
        if node.id in self.outside or count >= FLUSH_STEPS \
                or (count % 32 == 0 and time.monotonic() - self.last_flush >= FLUSH_SECONDS):
            self.flush(run, entry["target"])

    def save_node_state(self, node_id: str, data: dict | None) -> None:
        if data is None:
            self.cleared_nodes.add(node_id)
            return
        self.cleared_nodes.discard(node_id)
        self.store.save_node_state(self.run_id, node_id, data)

    def change_node_state(self, node_id: str, change: dict, whole) -> None:
        if node_id in self.cleared_nodes:  # the node runs again before its last run's end was committed
            self.save_node_state(node_id, whole())
            return
        self.store.change_node_state(self.run_id, node_id, change, whole)

    def record_transcript(self, node_id: str, agent: str, record: dict) -> None:
        self.store.add_transcript(self.run_id, node_id, agent, record)

    keeps_output = True

    def record_output(self, node_id: str, text: str) -> None:
        """A line a program of the step in flight wrote (wfexec.durable.outputs); off the path of steps that
        run none."""
        if self.output is None:
            from wfexec.durable.outputs import OutputKeeper

            self.output = OutputKeeper(self.store, self.run_id)
        self.output.add(self.step + 1, node_id, text)

    def node_state(self, node_id: str) -> dict | None:
        if node_id in self.cleared_nodes:
            return None
        return self.store.node_state(self.run_id, node_id)

    def flush(self, run: Run, current_node: str) -> None:
        if self.output is not None:  # a step's output is in the store before its journal row
            self.output.flush()
        pending = self.pending
        cleared = self.cleared_nodes
        answers = self.answers
        if pending and not cleared and self.since_snapshot < self.snapshot_due \
                and answers.version == self.answers_kept:
            # Most commits: the rows alone, one statement.
            self.since_snapshot += self.store.append_steps(self.run_id, pending, current_node)
            self.pending = []
            self.last_flush = time.monotonic()
            return
        answers_taken = answers.version != self.answers_kept
        if cleared:
            self.cleared_nodes = set()
        if not pending:
            for node_id in cleared:  # the run stopped inside the node: no step to journal with it
                self.store.save_node_state(self.run_id, node_id, None)
            return
        snapshot = None
        if self.since_snapshot >= self.snapshot_due:
            snapshot = state_for_snapshot(run.state)
        row_bytes, snapshot_bytes = self.store.commit_steps(
            self.run_id, pending, current_node, snapshot=snapshot, cleared_nodes=sorted(cleared),
            answers=answers.to_dict() if answers_taken else None)
        if answers_taken:
            self.answers_kept = answers.version
        if snapshot is not None:
            self.snapshot_bytes, self.since_snapshot = snapshot_bytes, 0
            self.snapshot_due = max(SNAPSHOT_MIN_BYTES, snapshot_bytes)
        else:
            self.since_snapshot += row_bytes
        self.pending = []
        self.last_flush = time.monotonic()


@dataclass
class Driven:
    """How one process's share of a durable run ended."""

    run_id: str
    status: str
    result: Any = None                  # engine Result when an ending was reached
    error: RunError | StoreError | None = None
    question: Any = None                # the Question a waiting run asks
    notes: list = field(default_factory=list)
    state: Any = None                   # the run's state where this process left it (for --state-out)
    refused: Any = None                 # AnswerRefused: the given answer a waiting run did not use, and why


def _drive(store: Store, run_id: str, run: Run, journal: DurableJournal, start_at: str | None,
           check_entry: bool) -> Driven:
    try:
        try:
            result = steploop.run_to_end(run, start_at, check_entry=check_entry)
        finally:
            # The run stands where its last finished step went: between that step's record and the next node's
            # start (where a Ctrl-C may land), `run.current` is still the finished node, and resume would run it
            # again. Before any step, at the node it started at. Journaled as "" past an ending, a kill before
            # the final status would make resume start over from the start node.
            history = run.state["history"]
            current = history[-1]["target"] if history else run.current.id if run.current is not None else ""
            journal.flush(run, current)
    except NeedsAnswer as waiting:
        question = waiting.question
        # Parked, not cut off: a node that asks runs again from its start once answered (NodeType.execute's
        # contract), so the mark of a step in flight goes.
        store.set_status(run_id, "waiting", current_node=question.node, in_flight=None, pending_question=question.to_json())
        if waiting.refused is not None:
            waiting.refused.waiting_in(run_id)
        return _left(run, Driven(run_id, "waiting", question=question, refused=waiting.refused))
    except EntryGateFailed as exc:
        store.set_status(run_id, "failed", last_error=exc.message)
        return _left(run, Driven(run_id, "failed", error=exc))
    except RunStopped as exc:
        # A step that can run again as it is (nothing was sent or done) is no longer in flight: resume runs it.
        store.set_status(run_id, "stopped", last_error=exc.format(), **({"in_flight": None} if exc.repeatable else {}))
        return _left(run, Driven(run_id, "stopped", error=exc))
    except RunError as exc:
        store.set_status(run_id, "failed", last_error=exc.format())
        return _left(run, Driven(run_id, "failed", error=exc))
    except StoreWriteError as exc:
        exc.located(run.current.where if run.current is not None else None,
                    run.current.id if run.current is not None else None)
        try:
            store.set_status(run_id, "stopped", last_error=exc.format())
        except StoreError:  # not even that fits: the run stays `running` with a dead owner, shown `interrupted`
            pass
        return _left(run, Driven(run_id, "stopped", error=exc))
    except KeyboardInterrupt as interrupt:
        why = f"interrupted ({interrupt})" if str(interrupt) else "interrupted"
        store.set_status(run_id, "stopped", last_error=why)
        interrupt.run_id = run_id  # type: ignore[attr-defined]  # for the resume command the person is shown
        raise
    except Exception as exc:  # the driver's error boundary: a bug outside any node (the journal, the store)
        error = InternalError(f"internal error: {type(exc).__name__}: {exc}",
                              "a bug in wfexec; please report it with the output of --debug",
                              where=run.current.where if run.current is not None else None,
                              node=run.current.id if run.current is not None else None)
        error.__cause__ = exc
        store.set_status(run_id, "failed", last_error=error.format())
        return _left(run, Driven(run_id, "failed", error=error))
    finally:
        store.release(run_id)
    status = ending_status(result.type)
    store.set_status(run_id, status, ending=result.ending, ending_type=result.type, current_node=None,
                     pending_question=None, result={k: v for k, v in result.to_json().items() if k != "state"})
    return _left(run, Driven(run_id, status, result=result))


def _left(run: Run, driven: Driven) -> Driven:
    driven.state = run.state
    return driven


def _guarding(options: Options, store: Store) -> Options:
    """The run's options naming its store, which no file consequence may then write, move or delete."""
    return options if options.store is not None else replace(options, store=store.path.absolute())


def start_run(store: Store, workflow: Workflow, *, inputs: dict, overrides: dict, io, options: Options) -> Driven:
    options = _guarding(options, store)
    run = steploop.start(workflow, io=io, options=options, inputs=inputs, overrides=overrides)
    run_id = store.create_run(workflow_path=str(workflow.path.resolve()), workflow_name=workflow.name,
                              workflow_hash=workflow.source_hash, node_hashes=node_hashes(workflow),
                              inputs=inputs, state=state_for_snapshot(run.state), start_node=workflow.start_node,
                              answers=options.answers.to_dict())
    journal = DurableJournal(store, run_id, workflow, 0, options.answers)
    run.journal = journal
    subprocesses.run_tag = run_id
    io.trace(f"Run {run_id} (store {store.path})")
    return _drive(store, run_id, run, journal, None, check_entry=True)


@dataclass
class ResumeChoices:
    accept_changes: bool = False
    rerun: bool = False
    skip: bool = False
    take_over: bool = False  # the run's lease names a process on another machine, which the person says is gone


class ResumeRefused(StoreError):
    """Resume cannot go on as asked. `awaits_decision`: it can, once the person decides how (rerun or skip
    a step in flight), like a run waiting for an answer; otherwise the request itself was wrong."""

    def __init__(self, message: str, hint: str = "", awaits_decision: bool = False):
        super().__init__(message, hint)
        self.awaits_decision = awaits_decision
        self.notes: list[str] = []  # what resume found before it refused (a changed workflow): still news

    @property
    def outcome(self) -> str:  # type: ignore[override]
        return "waiting" if self.awaits_decision else "invalid"


def not_safe_to_rerun(workflow: Workflow, node: Node, run_id: str) -> ResumeRefused:
    """What every driver says of a step that was running when the process running it died (a `wfexec run`, a
    worker), when the step is not safe to run twice: the run waits for `resume --rerun` or `--skip` (exit 3)."""
    return ResumeRefused(
        f"node '{node.id}' was running when run {run_id} stopped, and it is not safe to run twice "
        f"({', '.join(_outside_effects(workflow, node) or [node.type])}); it may or may not have finished",
        "check its effects, then resume with --rerun to run it again or --skip to go on as if it succeeded",
        awaits_decision=True)


def _outside_effects(workflow: Workflow, node: Node) -> list[str]:
    return sorted({e for c in workflow.node_calls(node) for e in c.spec.effects} & OUTSIDE_EFFECTS)


def compare_versions(record_hashes: dict, workflow: Workflow, completed: set[str], current: str | None) -> dict:
    now = node_hashes(workflow)
    changed = {key.split(".", 1)[1] for key in set(record_hashes) | set(now) if record_hashes.get(key) != now.get(key)}
    return {"completed": sorted(changed & completed), "current": sorted(changed & ({current} if current else set())),
            "future": sorted(changed - completed - ({current} if current else set()))}


def resume_run(store: Store, run_id: str, workflow_loader, *, io, options: Options,
               choices: ResumeChoices) -> Driven:
    options = _guarding(options, store)
    record = store.get(run_id)
    run_id = record.id
    if record.status in FINISHED:
        raise ResumeRefused(f"run {run_id} has already finished ({record.status}, ending "
                            f"'{record.ending or '-'}'); there is nothing to resume",
                            "`wfexec show` prints how it ended; start a new run with `wfexec run`")
    store.acquire(run_id, take_over=choices.take_over)
    # Whatever an earlier attempt started and left running (its watchdog killed too) goes before anything re-runs.
    subprocesses.kill_tagged(run_id)
    subprocesses.run_tag = run_id
    try:
        workflow = workflow_loader(record.workflow_path)
        _check_answers(record, workflow, options.answers)
        # What was given before and not taken yet still answers, unless these answers answer the same question.
        options = replace(options, answers=options.answers.over(Answers(record.answers)))
        replayed = store.replay(run_id)
        steps_done, state = replayed.step, replayed.state
        state["history"] = [{k: row[k] for k in ("node", "type", "outcome", "target", "at")}
                            for row in store.journal_tail(run_id, HISTORY_WINDOW)]
        completed = store.journal_nodes(run_id)
        notes: list[str] = []
        changed = node_hashes(workflow) != record.node_hashes
        if changed:
            diff = compare_versions(record.node_hashes, workflow, completed, record.current_node)
            described = "; ".join(f"{what} nodes changed: {', '.join(names)}" for what, names in diff.items() if names)
            if diff["completed"] and not choices.accept_changes:
                raise ResumeRefused(f"the workflow (or a file its nodes name) changed since run {run_id} started "
                                    f"({described})",
                                    "review the change; resume with --accept-changes to continue with the new "
                                    "version, or start a new run")
            notes.append(f"the workflow (or a file its nodes name) changed since the run started ({described}); "
                         "continuing with the new version")
        start = record.current_node or workflow.start_node
        if start not in workflow.nodes and start not in workflow.endings:
            raise ResumeRefused(f"run {run_id} stopped at '{start}', which the workflow no longer has",
                                "restore the node, or start a new run")
        run = Run(workflow, io=io, options=options, inputs=record.inputs, state=state, budget=[steps_done])
        journal = DurableJournal(store, run_id, workflow, steps_done, options.answers, replayed)
        run.journal = journal
        if record.in_flight:
            start = _settle_in_flight(store, run, journal, workflow, record, choices, notes) or start
            if record.in_flight.get("started_at") and start == record.in_flight["node"]:
                # The step runs again: its expressions read the time it first started.
                run.resumed_step_ms = round(record.in_flight["started_at"] * 1000)
        # Only now, past every refusal: a refused resume leaves the old fingerprints, so the next attempt
        # reports the same change again instead of finding nothing changed.
        fingerprints = {"workflow_hash": workflow.source_hash, "node_hashes": _dumps(node_hashes(workflow))} \
            if changed else {}
        store.set_status(run_id, "running", pending_question=None, last_error=None,
                         answers=options.answers.to_dict(), **fingerprints)
    except ResumeRefused as refused:
        store.release(run_id)
        refused.notes = notes + refused.notes
        raise
    except BaseException:
        store.release(run_id)
        raise
    driven = _drive(store, run_id, run, journal, start, check_entry=False)
    driven.notes = notes + driven.notes
    return driven


def _check_answers(record, workflow: Workflow, answers) -> None:
    """Refuse the answers before anything of the run moves: a key that names no question, or an answer to the
    question the run waits on that fits none of its options as they were when it was asked."""
    try:
        check_answer_keys(workflow, answers)
        pending = record.pending_question
        if record.status == "waiting" and pending and pending.get("key") in answers:
            match_answer(Question.from_json(pending), answers.peek(pending["key"]))
    except AnswerRefused as refused:
        if refused.question is not None:
            refused.waiting_in(record.id)
        raise


def _settle_in_flight(store: Store, run: Run, journal: DurableJournal, workflow: Workflow, record, choices,
                      notes: list) -> str | None:
    """The step that was running when the process died: run it again, or skip it."""
    node_id = record.in_flight["node"]
    node = workflow.nodes.get(node_id)
    if node is None:
        return None
    if choices.skip:
        edge = node.kind.skip_edge
        if edge is None:
            raise ResumeRefused(f"a {node.type} node cannot be skipped", "resume with --rerun")
        target = getattr(node.spec, edge)
        if target is None or not isinstance(target, str):
            raise ResumeRefused(f"node '{node_id}' has no static {edge} to skip to", "resume with --rerun")
        journal.started = _clock_ns()
        steploop.record(run, node, {"skipped": True}, target)
        journal.flush(run, target)
        notes.append(f"skipped '{node_id}', which was running when the run stopped; continuing at '{target}'")
        return target
    if not choices.rerun and not is_idempotent(workflow, node):
        if run.options.interactive:
            decision = _ask_rerun_or_skip(run.io, node_id, _outside_effects(workflow, node) or [node.type])
            if decision != "stop":
                return _settle_in_flight(store, run, journal, workflow, record,
                                         ResumeChoices(choices.accept_changes, decision == "rerun",
                                                       decision == "skip"), notes)
        raise not_safe_to_rerun(workflow, node, record.id)
    notes.append(f"running '{node_id}' again: it was in flight when the run stopped")
    return node_id


def _ask_rerun_or_skip(io, node_id: str, effects: list[str]) -> str:
    from wfexec.nodes.base import Choice, Question
    from wfexec.running.prompts import Answer, match_answer

    question = Question(
        node="resume", header="Resume",
        text=f"'{node_id}' was running when the run stopped and may or may not have finished "
             f"({', '.join(effects)}). What now?",
        choices=(Choice("rerun", "Run it again"), Choice("skip", "Skip it, as if it succeeded"),
                 Choice("stop", "Stop here")),
        allow_other=False, dynamic=False)
    answer = io.ask(question)
    choice = (answer if isinstance(answer, Answer) else match_answer(question, answer)).choice
    assert choice is not None  # allow_other=False: every answer is one of the choices
    return choice.id
