"""`wfexec test`: a skill's test cases (`tests/*.yaml` beside its workflow), run, checked, and measured.

Each case runs the workflow through `wfexec.api.run` — the one engine, as `wfexec run --ephemeral` runs it — in a
fresh temporary folder that is also its working directory, with its inputs, answers, state values and LLM replies
(a `replay` backend), and no run store. What it expects (ending, status, output, state, files, commands) is compared
with what the run left. The route each case took is read from the run's trace (every node entered and the edge it
left by, sub-workflows included), which is also what coverage counts: the edges each node type declares
(`NodeType.targets`) against the edges the cases took.

A test file that cannot be used is reported as `file:line:col: error: what — how to fix` (exit 2) before anything
runs; a case that fails shows what was expected, what came, and the nodes the run went through.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from wfexec.exit_codes import exit_code_for

TESTS_FOLDER = "tests"
WORKFLOW_FILE = "workflow.yaml"

# Ending types, then how a run that reached no ending stopped (the words of `wfexec run --format json`).
STATUSES = ("success", "failure", "error", "cancelled", "waiting", "stopped", "failed")

# A commit made by a case's `setup:` needs an identity, and the machine running the tests may have none; with a
# fixed date too, the same setup makes the same commit ids every time, so a case may expect them.
SETUP_GIT_IDENTITY = {"GIT_AUTHOR_NAME": "wfexec test", "GIT_AUTHOR_EMAIL": "test@wfexec.invalid",
                      "GIT_COMMITTER_NAME": "wfexec test", "GIT_COMMITTER_EMAIL": "test@wfexec.invalid",
                      "GIT_AUTHOR_DATE": "2025-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2025-01-01T00:00:00Z"}
SETUP_TIMEOUT = 120.0

_SCALAR = {"type": ["string", "number", "boolean", "null"]}
_ANSWER = {"anyOf": [_SCALAR, {"type": "array", "items": _SCALAR, "minItems": 1}]}
_RELATIVE_PATH = {"type": "string", "minLength": 1}
_EXPECTED_FILE = {"anyOf": [
    {"type": "string"},
    {"type": "object", "additionalProperties": False, "minProperties": 1,
     "properties": {"exists": {"type": "boolean"},
                    "contains": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}}},
]}
_REPLY = {"anyOf": [
    {"type": "string"},
    {"type": "object", "additionalProperties": False, "required": ["reply"],
     "properties": {"reply": {"type": "string"}, "agent": {"type": "string"}, "state": {"type": "string"},
                    "prompt": {"type": "string"}}},
]}

CASE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "patternProperties": {"^x-": {}},
    "required": ["name", "expect"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "description": {"type": "string"},
        "inputs": {"type": "object"},
        "answers": {"type": "object", "additionalProperties": _ANSWER},
        "set": {"type": "object"},
        "replies": {"anyOf": [{"type": "string", "minLength": 1}, {"type": "array", "items": _REPLY}]},
        "files": {"type": "object", "additionalProperties": {"type": "string"}},
        "setup": {"type": "array", "items": {"type": "string", "minLength": 1}},
        "expect": {
            "type": "object",
            "additionalProperties": False,
            "minProperties": 1,
            "properties": {
                "ending": {"type": "string"},
                "status": {"enum": list(STATUSES)},
                "output": {},
                "state": {"type": "object"},
                "files": {"type": "object", "additionalProperties": _EXPECTED_FILE},
                "effects": {"type": "array", "items": {"type": "string"}},
            },
        },
    },
}

TEST_FILE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "patternProperties": {"^x-": {}},
    "required": ["cases"],
    "properties": {
        "description": {"type": "string"},
        "cases": {"type": "array", "minItems": 1, "items": CASE_SCHEMA},
    },
}


class TestFileError(Exception):
    """A test file (or what it names) that cannot be used; carries every diagnostic."""

    def __init__(self, diagnostics: list):
        super().__init__("\n".join(d.format() for d in diagnostics))
        self.diagnostics = diagnostics


# -- finding the tests ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Suite:
    """One test file and the workflow it tests."""

    tests: Path
    workflow: Path


def find_suites(paths: Sequence[Path]) -> tuple[list[Suite], list[str]]:
    """The test files under `paths` (skill folders, workflow files, test files, or folders of skills searched
    recursively), and the problems with paths that hold none."""
    from wfexec.system.files import unreadable

    found: list[Suite] = []
    problems: list[str] = []
    for given in paths:
        # Absolute: each case runs in a folder of its own, and what the workflow names is found from its file.
        path = Path(given).resolve()
        shown = _display(path)
        closed = unreadable(path)
        if closed is not None:  # pathlib's is_file and is_dir raise PermissionError there
            problems.append(f"{shown}: error: cannot read it: it {closed} — ask the owner for access (chmod), or "
                            "run wfexec as a user who may read it")
            continue
        if path.is_file() and path.name == WORKFLOW_FILE or path.is_dir() and (path / WORKFLOW_FILE).is_file():
            workflow = path if path.is_file() else path / WORKFLOW_FILE
            suites = _suites_of(workflow)
            if not suites:
                problems.append(f"{shown}: error: the skill has no tests — add {_display(workflow.parent / TESTS_FOLDER)}"
                                f"/{workflow.parent.name}.yaml with `cases:` (docs/guide/using.md: Testing workflows)")
            found += suites
        elif path.is_file():
            workflow = path.parent.parent / WORKFLOW_FILE
            if path.parent.name != TESTS_FOLDER or not workflow.is_file():
                problems.append(f"{shown}: error: a test file lives in the `{TESTS_FOLDER}/` folder beside the "
                                f"{WORKFLOW_FILE} it tests — move it to SKILL/{TESTS_FOLDER}/")
                continue
            found.append(Suite(path, workflow))
        elif path.is_dir():
            suites = [suite for workflow in _workflows_below(path) for suite in _suites_of(workflow)]
            if not suites:
                problems.append(f"{shown}: error: no tests found (no {TESTS_FOLDER}/*.yaml beside a {WORKFLOW_FILE}) "
                                f"— add SKILL/{TESTS_FOLDER}/SKILL.yaml with `cases:` "
                                "(docs/guide/using.md: Testing workflows)")
            found += suites
        else:
            problems.append(f"{given}: error: no such file or folder — pass a skill folder, a workflow, a test "
                            "file, or a folder of skills")
    unique = list(dict.fromkeys(found))
    return unique, problems


def _suites_of(workflow: Path) -> list[Suite]:
    folder = workflow.parent / TESTS_FOLDER
    if not folder.is_dir():
        return []
    return [Suite(file, workflow) for file in sorted(folder.iterdir())
            if file.suffix in (".yaml", ".yml") and file.is_file()]


def _workflows_below(folder: Path) -> list[Path]:
    found = []
    for root, dirs, files in os.walk(folder):
        # A virtualenv or a dependency folder holds no skill of the project's, only time to walk.
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("node_modules", "__pycache__"))
        if WORKFLOW_FILE in files:
            found.append(Path(root) / WORKFLOW_FILE)
    return found


# -- reading a test file -------------------------------------------------------------------------------------

@dataclass
class Case:
    name: str
    file: str
    line: int
    column: int
    data: dict

    @property
    def place(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


def read_suite(suite: Suite, workflow) -> list[Case]:
    """The cases of a test file, checked against its shape and against the workflow; TestFileError lists every
    problem at its line and column."""
    from wfexec.language.jsonschemas import SchemaCheck
    from wfexec.language.loader import load_file
    from wfexec.language.schema import report_errors

    document = load_file(suite.tests)
    if document.diagnostics:
        raise TestFileError(document.diagnostics)
    report = document.reporter()
    data = document.data
    if not isinstance(data, dict):
        report.error((), "test-file", "a test file is a mapping with `cases:`, a list of cases",
                     "see docs/guide/using.md: Testing workflows")
        raise TestFileError(report.diagnostics)
    report_errors(SchemaCheck(TEST_FILE_SCHEMA).errors(data), (), report, "a test file")
    if report.diagnostics:
        raise TestFileError(report.diagnostics)
    cases = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(data["cases"]):
        at = ("cases", index)
        if raw["name"] in seen:
            report.error(at + ("name",), "duplicate-case", f"a second case named '{raw['name']}'",
                         f"give each case its own name (the first is case {seen[raw['name']] + 1})")
        seen.setdefault(raw["name"], index)
        _check_case(raw, at, report, suite, workflow)
        line, column = report.position(at)
        cases.append(Case(raw["name"], document.path, line, column, raw))
    if report.diagnostics:
        raise TestFileError(sorted(report.diagnostics, key=lambda d: (d.line, d.column)))
    return cases


def _check_case(raw: dict, at: tuple, report, suite: Suite, workflow) -> None:
    """What the schema cannot say: the names a case uses must be the workflow's, paths must stay in the case's
    folder, the inputs must fit the workflow's input schema."""
    from wfexec.language.diagnostics import did_you_mean
    from wfexec.language.inputs import InputError, check_inputs
    from wfexec.language.paths import PathError, parse_path
    from wfexec.running.prompts import REPEAT, answer_keys

    expect = raw["expect"]
    endings = {e.reported_as or e.id for e in workflow.endings.values()} | set(workflow.endings)
    if "ending" in expect and expect["ending"] not in endings:
        report.error(at + ("expect", "ending"), "unknown-ending",
                     f"'{expect['ending']}' is no ending of {workflow.name}",
                     did_you_mean(expect["ending"], endings) or "endings: " + ", ".join(sorted(endings)))
    keys = answer_keys(workflow)
    names = [k for k in keys if isinstance(k, str)]
    for key in raw.get("answers") or {}:
        node = key[:-len(REPEAT)] if key.endswith(REPEAT) and len(key) > len(REPEAT) else key
        if not any(node == k if isinstance(k, str) else k.fullmatch(node) for k in keys):
            report.error(at + ("answers", key), "unknown-question", f"'{node}' names no question of {workflow.name}",
                         did_you_mean(node, names) or "questions: " + (", ".join(names) or "none"), at_key=True)
    for section, paths in (("set", raw.get("set") or {}), ("state", expect.get("state") or {})):
        for path in paths:
            try:
                parse_path(path)
            except PathError as exc:
                where = at + (("set",) if section == "set" else ("expect", "state")) + (path,)
                report.error(where, "bad-path", exc.message, "write a dotted state path such as computed.x",
                             at_key=True)
    for where, paths in ((at + ("files",), raw.get("files") or {}), (at + ("expect", "files"), expect.get("files") or {})):
        for path in paths:
            if _outside(path):
                report.error(where + (path,), "bad-file-path", f"'{path}' is not inside the case's folder",
                             "write a relative path without `..`", at_key=True)
    replies = raw.get("replies")
    if isinstance(replies, str) and not (suite.tests.parent / replies).is_file():
        report.error(at + ("replies",), "no-cassette", f"no cassette at {replies}",
                     f"a path relative to {_display(suite.tests.parent)}, or a list of replies")
    elif isinstance(replies, str):
        from wfexec.backends.replay import CassetteError, load_cassette

        try:
            load_cassette(suite.tests.parent / replies)
        except CassetteError as exc:
            report.error(at + ("replies",), "bad-cassette", exc.message,
                         "record one with `wfexec run --record FILE`, or give the replies as a list")
    try:
        check_inputs(raw.get("inputs") or {}, workflow.input_schema)
    except InputError as exc:
        report.error(at + ("inputs",) if "inputs" in raw else at, "bad-inputs", exc.message,
                     "give the inputs the workflow's input_schema asks for")


def _outside(path: str) -> bool:
    p = Path(path)
    return p.is_absolute() or ".." in p.parts or not p.parts


# -- the route a run took, read from its trace ---------------------------------------------------------------

@dataclass
class _Frame:
    workflow: Any  # the Workflow running, None for one we cannot tell (its lines are not counted)
    node: Any = None
    steps: list = field(default_factory=list)  # what the run went through, for the failure report


class Recorder:
    """The `Io` a case runs with: it traces everything and keeps what it needs, the route of the run through
    its workflow and the sub-workflows it runs (nodes entered, edges left by), and the commands run."""

    tracing = True

    def __init__(self, workflow):
        self.stack = [_Frame(workflow)]
        self.top = self.stack[0]
        self.nodes: list[tuple[Path, str]] = []
        self.edges: list[tuple[Path, str, str]] = []
        self.commands: list[str] = []
        self.printed: list[str] = []

    def print(self, text: str = "") -> None:
        self.printed.append(text)

    def markdown(self, text: str) -> None:
        self.printed.append(text)

    def table(self, headers, rows, title=None) -> None:
        self.printed.append(" | ".join(map(str, headers)))

    def error(self, text: str) -> None:
        self.printed.append(text)

    def ask(self, question):
        return None  # never asked: a case runs without a terminal, its answers are given

    def trace(self, text: str) -> None:
        frame = self.stack[-1]
        if text.startswith("Node: "):
            node_id = text[len("Node: "):].rpartition(" (")[0]
            workflow = frame.workflow
            frame.node = workflow.nodes.get(node_id) if workflow is not None else None
            frame.steps.append(node_id)
            if frame.node is not None:
                self.nodes.append((workflow.path, node_id))
        elif text.startswith("→ "):
            node = frame.node
            if node is not None:
                label = _edge_label(node, text[len("→ "):])
                self.edges.append((frame.workflow.path, node.id, label))
        elif text.startswith("Sub-workflow: "):
            child = _Frame(_subworkflow(frame.node, text))
            frame.steps.append(child)
            self.stack.append(child)
        elif text.startswith("Ending: "):
            frame.steps.append(text[len("Ending: "):].partition(" (")[0])
            if len(self.stack) > 1:
                self.stack.pop()
        elif text.startswith("  $ "):
            self.commands.append(text[len("  $ "):].split("   (in ")[0])

    def route(self) -> str:
        """`a → b → sub-workflow [x → y → ending] → done`."""
        def shown(frame: _Frame) -> str:
            return " → ".join(f"{getattr(s.workflow, 'name', '?')} [{shown(s)}]" if isinstance(s, _Frame) else s
                              for s in frame.steps)

        return shown(self.top) or "(no node was entered)"


def _edge_label(node, taken: str) -> str:
    """The edge of `node` a `→ label: target` trace line names; the longest label that fits, since a label may
    begin like another (`ending a`, `ending a b`)."""
    labels = sorted((label for label, _ in node.kind.targets(node.spec)), key=len, reverse=True)
    for label in labels:
        if taken.startswith(label + ": "):
            return label
    return taken.partition(": ")[0]


def _subworkflow(node, text: str):
    if node is None:
        return None
    candidates = list(node.kind.subworkflows(node.spec))
    for workflow in candidates:
        if text == f"Sub-workflow: {workflow.name} ({workflow.path.name})":
            return workflow
    return candidates[0] if len(candidates) == 1 else None


# -- running one case ----------------------------------------------------------------------------------------

_MISSING = object()


@dataclass
class Mismatch:
    what: str
    expected: Any
    actual: Any

    def to_json(self) -> dict:
        return {"what": self.what, "expected": _plain(self.expected), "actual": _plain(self.actual)}


@dataclass
class CaseResult:
    case: Case
    suite: Suite
    status: str
    ending: str | None
    mismatches: list[Mismatch]
    route: str
    seconds: float
    message: str = ""
    nodes: list = field(default_factory=list)
    edges: list = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.mismatches

    def to_json(self) -> dict:
        return {"file": self.case.file, "name": self.case.name, "line": self.case.line, "passed": self.passed,
                "status": self.status, "ending": self.ending, "message": self.message, "route": self.route,
                "seconds": round(self.seconds, 4), "failures": [m.to_json() for m in self.mismatches]}


def run_case(case: Case, suite: Suite, workflow) -> CaseResult:
    """Run one case in a fresh folder of its own and compare what it left with what it expects."""
    started = time.perf_counter()
    recorder = Recorder(workflow)
    with tempfile.TemporaryDirectory(prefix="wfexec-test-") as scratch:
        folder = Path(scratch).resolve() / "work"
        folder.mkdir()
        ran = _run_in(folder, case, suite, workflow, recorder)
        mismatches = ran.pop("mismatches", None) or _compare(case.data["expect"], ran, folder, recorder)
    return CaseResult(case, suite, ran["status"], ran.get("ending"), mismatches, recorder.route(),
                      time.perf_counter() - started, ran.get("message", ""), recorder.nodes, recorder.edges)


def _run_in(folder: Path, case: Case, suite: Suite, workflow, recorder: Recorder) -> dict:
    """How the run ended: status, ending, message, output, state; `mismatches` when it could not start."""
    from wfexec import api
    from wfexec.errors import WfexecError
    from wfexec.running.engine import RunError
    from wfexec.running.prompts import NeedsAnswer

    data = case.data
    for path, content in (data.get("files") or {}).items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    for command in data.get("setup") or ():
        problem = _setup(command, folder)
        if problem:
            return {"status": "setup", "message": problem, "mismatches": [Mismatch("setup", command, problem)]}
    # The case's folder is the run's working directory (files, commands, git); the process stays where it is,
    # since the compiled workflow's own paths (its documents, sub-workflows) are relative to it.
    try:
        backend = _replies(data.get("replies"), case, suite)
        answers = dict(data.get("answers") or {})
        if backend is not None:
            # As `wfexec run --replay`: a cassette's recorded answers answer what the case leaves unanswered.
            for node, values in backend.answers().items():
                if node not in answers and f"{node}*" not in answers:
                    answers[node] = values
        result = api.run(workflow, inputs=data.get("inputs") or {}, answers=answers, overrides=data.get("set") or {},
                         io=recorder, backend=backend, cwd=folder, ephemeral=True)
    except NeedsAnswer as waiting:
        question = waiting.question
        return {"status": "waiting", "state": getattr(waiting, "state", None),
                "message": f"waiting: node '{question.node}' asks: {question.text} "
                           f"(options: {', '.join(c.id for c in question.choices) or 'free text'})"}
    except RunError as exc:
        return {"status": exc.outcome if exc.outcome == "stopped" else "failed",
                "state": getattr(exc, "state", None), "message": exc.format()}
    except WfexecError as exc:  # an answer refused, a cassette unreadable or diverged from: the case is wrong
        return {"status": "failed", "message": exc.format()}
    return {"status": result.type, "ending": result.ending, "message": result.message, "output": result.output,
            "state": result.state}


def _setup(command: str, folder: Path) -> str | None:
    """Run one `setup:` command in the case's folder; why it failed, or None."""
    environment = {**os.environ, **SETUP_GIT_IDENTITY}
    try:
        done = subprocess.run(command, shell=True, cwd=folder, env=environment, capture_output=True, text=True,
                              timeout=SETUP_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return f"still running after {SETUP_TIMEOUT:g} s; stopped"
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        return f"exit code {done.returncode}" + (f": {said[-1]}" if said else "")
    return None


def _replies(replies, case: Case, suite: Suite):
    """The `replay` backend answering the case's LLM steps: from its list of replies, or a cassette file."""
    if replies is None:
        return None
    from wfexec.backends.replay import ReplayBackend

    if isinstance(replies, str):
        return ReplayBackend(suite.tests.parent / replies)
    interactions = [{"kind": "llm", "reply": r} if isinstance(r, str) else {"kind": "llm", **r} for r in replies]
    return ReplayBackend(Path(f"{case.place} (replies of case '{case.name}')"), interactions)


# -- comparing -----------------------------------------------------------------------------------------------

def _compare(expect: dict, ran: dict, folder: Path, recorder: Recorder) -> list[Mismatch]:
    from wfexec.language.paths import get_path, parse_path

    found: list[Mismatch] = []
    status = ran["status"]
    if "status" in expect:
        if expect["status"] != status:
            found.append(Mismatch("status", expect["status"], status))
    elif status in ("waiting", "stopped", "failed"):
        # Unless a case expects it, a run that reaches no ending is a failure, whatever else matched.
        found.append(Mismatch("status", "an ending", status))
    if "ending" in expect and expect["ending"] != ran.get("ending"):
        found.append(Mismatch("ending", expect["ending"], ran.get("ending")))
    if "output" in expect and not matches(expect["output"], ran.get("output", _MISSING)):
        found.append(Mismatch("output", expect["output"], ran.get("output", _MISSING)))
    state = ran.get("state") or {}
    for path, wanted in (expect.get("state") or {}).items():
        actual = get_path(state, parse_path(path), _MISSING)
        if not matches(wanted, actual):
            found.append(Mismatch(f"state {path}", wanted, actual))
    for path, wanted in (expect.get("files") or {}).items():
        found += _compare_file(path, wanted, folder / path)
    if "effects" in expect and expect["effects"] != recorder.commands:
        found.append(Mismatch("effects (commands run)", expect["effects"], recorder.commands))
    return found


def _compare_file(path: str, wanted: Any, file: Path) -> list[Mismatch]:
    content = file.read_text(encoding="utf-8", errors="replace") if file.is_file() else None
    if isinstance(wanted, str):
        return [] if content == wanted else [Mismatch(f"file {path}", wanted,
                                                      content if content is not None else _MISSING)]
    found = []
    if "exists" in wanted and wanted["exists"] != file.exists():
        found.append(Mismatch(f"file {path} exists", wanted["exists"], file.exists()))
    pieces = wanted.get("contains")
    for piece in [pieces] if isinstance(pieces, str) else pieces or ():
        if content is None or piece not in content:
            found.append(Mismatch(f"file {path} contains", piece, content if content is not None else _MISSING))
    return found


def matches(expected: Any, actual: Any) -> bool:
    """Whether `actual` is what `expected` describes: a mapping needs at least the keys expected (and those
    matching), a list the same items in order, anything else the same value (`true` is not `1`)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and matches(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(actual) == len(expected) and \
            all(matches(e, a) for e, a in zip(expected, actual))
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    return expected == actual


def _plain(value: Any) -> Any:
    return "<missing>" if value is _MISSING else value


def _shown(value: Any) -> str:
    if value is _MISSING:
        return "(nothing there)"
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 400 else text[:399] + "…"


# -- coverage ------------------------------------------------------------------------------------------------

@dataclass
class Coverage:
    workflow: Any
    nodes: list[str]
    branches: list[tuple[str, str, str]]  # (node, label, target as written)
    # A v8 workflow's routes to its default_error, counted apart: the rewrite gives one to every action and
    # conditional the author left without (v8.py), so most are routes for failures no input can cause, and
    # counting them as branches would bury the ones the author wrote.
    error_routes: list[tuple[str, str, str]] = field(default_factory=list)
    nodes_taken: set = field(default_factory=set)
    branches_taken: set = field(default_factory=set)  # (node, label)

    def error_routes_taken(self) -> int:
        return sum(1 for b in self.error_routes if b[:2] in self.branches_taken)

    @property
    def uncovered_nodes(self) -> list[str]:
        return [n for n in self.nodes if n not in self.nodes_taken]

    @property
    def uncovered_branches(self) -> list[tuple[str, str, str]]:
        return [b for b in self.branches if b[:2] not in self.branches_taken]

    def counts(self) -> tuple[int, int, int, int]:
        nodes = len(self.nodes) - len(self.uncovered_nodes)
        branches = len(self.branches) - len(self.uncovered_branches)
        return nodes, len(self.nodes), branches, len(self.branches)

    def to_json(self) -> dict:
        nodes, node_total, branches, branch_total = self.counts()
        return {"workflow": _display(self.workflow.path), "name": self.workflow.name,
                "nodes": {"covered": nodes, "total": node_total},
                "branches": {"covered": branches, "total": branch_total, "percent": _percent(branches, branch_total)},
                "default_error_routes": {"covered": self.error_routes_taken(), "total": len(self.error_routes)},
                "uncovered_nodes": self.uncovered_nodes,
                "uncovered_branches": [{"node": n, "label": label, "target": target}
                                       for n, label, target in self.uncovered_branches]}


def coverage_of(workflows: Iterable, results: Iterable[CaseResult]) -> list[Coverage]:
    """Node and branch coverage of each tested workflow and each sub-workflow its `reference` nodes run."""
    from wfexec.language.expressions import Template

    found: dict[Path, Coverage] = {}
    pending = list(workflows)
    while pending:
        workflow = pending.pop(0)
        if workflow.path in found:
            continue
        branches: list[tuple[str, str, str]] = []
        error_routes: list[tuple[str, str, str]] = []
        for node in workflow.nodes.values():
            for label, target in node.kind.targets(node.spec):
                if target is None:
                    continue
                edge = (node.id, label, target.source if isinstance(target, Template) else str(target))
                (error_routes if workflow.default_error and edge[2] == workflow.default_error else branches).append(edge)
            pending += list(node.kind.subworkflows(node.spec))
        found[workflow.path] = Coverage(workflow, list(workflow.nodes), branches, error_routes)
    for result in results:
        for path, node in result.nodes:
            if path in found:
                found[path].nodes_taken.add(node)
        for path, node, label in result.edges:
            if path in found:
                found[path].branches_taken.add((node, label))
    return list(found.values())


def _percent(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 1) if whole else 100.0


def _display(path: Path) -> str:
    from wfexec.language.loader import display_path

    return display_path(path)


# -- reports -------------------------------------------------------------------------------------------------

def _text_report(results: list[CaseResult], coverage: list[Coverage] | None, seconds: float) -> str:
    lines = []
    current = None
    for result in results:
        if result.case.file != current:
            current = result.case.file
            lines.append(current)
        if result.passed:
            lines.append(f"  ok    {result.case.name}")
            continue
        lines.append(f"  FAIL  {result.case.name}  ({result.case.place})")
        lines += ["        " + line for line in failure_lines(result)]
    if coverage is not None:
        lines.append("coverage:")
        for measured in coverage:
            nodes, node_total, branches, branch_total = measured.counts()
            routes = measured.error_routes
            lines.append(f"  {_display(measured.workflow.path)}: nodes {nodes}/{node_total}, branches "
                         f"{branches}/{branch_total} ({_percent(branches, branch_total):g}%)"
                         + (f"; routes to default_error {measured.error_routes_taken()}/{len(routes)} taken"
                            if routes else ""))
            for node, label, target in measured.uncovered_branches:
                lines.append(f"    not taken: {node} → {target} ({label})")
        covered, total = _branch_totals(coverage)
        lines.append(f"  total: branches {covered}/{total} ({_percent(covered, total):g}%)")
    failed = sum(1 for r in results if not r.passed)
    lines.append(f"{len(results) - failed} passed, {failed} failed in {seconds:.2f} s")
    return "\n".join(lines) + "\n"


def failure_lines(result: CaseResult) -> list[str]:
    """How a failing case reads: each expectation missed, with what came instead, and the nodes taken."""
    lines = []
    for mismatch in result.mismatches:
        lines += [f"{mismatch.what}:", f"  expected: {_shown(mismatch.expected)}",
                  f"  actual:   {_shown(mismatch.actual)}"]
    if result.message and result.status not in ("success",):
        lines.append(f"run: {result.message}")
    lines.append(f"nodes taken: {result.route}")
    return lines


def _branch_totals(coverage: list[Coverage]) -> tuple[int, int]:
    covered = sum(c.counts()[2] for c in coverage)
    total = sum(c.counts()[3] for c in coverage)
    return covered, total


def junit_xml(results: list[CaseResult], coverage: list[Coverage]) -> str:
    """JUnit XML, as CI servers read it: a suite per test file, a test case per case, a failure with the same
    text the terminal shows; branch coverage as properties of the whole run."""
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites", name="wfexec test", tests=str(len(results)),
                      failures=str(sum(1 for r in results if not r.passed)),
                      time=f"{sum(r.seconds for r in results):.3f}")
    properties = ET.SubElement(root, "properties")
    covered, total = _branch_totals(coverage)
    ET.SubElement(properties, "property", name="branch_coverage", value=f"{_percent(covered, total):g}")
    for measured in coverage:
        nodes, node_total, branches, branch_total = measured.counts()
        ET.SubElement(properties, "property", name=f"coverage {_display(measured.workflow.path)}",
                      value=f"nodes {nodes}/{node_total}, branches {branches}/{branch_total}")
    by_file: dict[str, list[CaseResult]] = {}
    for result in results:
        by_file.setdefault(result.case.file, []).append(result)
    for file, cases in by_file.items():
        suite = ET.SubElement(root, "testsuite", name=file, tests=str(len(cases)),
                              failures=str(sum(1 for r in cases if not r.passed)), errors="0",
                              time=f"{sum(r.seconds for r in cases):.3f}")
        for result in cases:
            element = ET.SubElement(suite, "testcase", classname=file, name=result.case.name,
                                    time=f"{result.seconds:.3f}", file=file, line=str(result.case.line))
            if not result.passed:
                first = result.mismatches[0]
                failure = ET.SubElement(element, "failure", type="mismatch",
                                        message=f"{first.what}: expected {_shown(first.expected)}, "
                                                f"got {_shown(first.actual)}")
                failure.text = "\n".join(
                    [f"{m.what}: expected {_shown(m.expected)}, got {_shown(m.actual)}" for m in result.mismatches]
                    + ([f"run: {result.message}"] if result.message else []) + [f"nodes taken: {result.route}"])
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


# -- the command ---------------------------------------------------------------------------------------------

def test_command(paths: Sequence[Path], *, coverage: bool = False, format: str = "text", junit: Path | None = None,
                 fail_under: float | None = None, debug: bool = False) -> int:
    """`wfexec test`: 0 when every case passes (and branch coverage is at least `fail_under`), 1 when one fails
    (or coverage is lower), 2 when a test file or a workflow cannot be used."""
    from wfexec import api
    from wfexec.commands.run import report_error
    from wfexec.language.diagnostics import ERROR
    from wfexec.system.files import check_writable, write_output
    from wfexec.types.registry import BrokenPlugins

    if junit is not None:
        check_writable(junit, option="--junit")  # CannotWrite (exit 2) before the cases run, not after
    suites, problems = find_suites(list(paths) or [Path(".")])
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return exit_code_for("invalid")
    planned: list[tuple[Suite, Any, list[Case]]] = []
    invalid = 0
    workflows: dict[Path, Any] = {}
    for suite in suites:
        try:
            if suite.workflow not in workflows:
                workflow, diagnostics = api.check_to_run(suite.workflow)
                errors = [d for d in diagnostics if d.severity == ERROR]
                if workflow is None or errors:
                    for d in errors:
                        print(d.format(), file=sys.stderr)
                    print(f"{_display(suite.workflow)}: not tested, the workflow has {len(errors)} error"
                          f"{'s' if len(errors) != 1 else ''} (wfexec validate shows them all)", file=sys.stderr)
                    invalid += 1
                    workflows[suite.workflow] = None
                    continue
                workflows[suite.workflow] = workflow
            workflow = workflows[suite.workflow]
            if workflow is None:
                continue
            planned.append((suite, workflow, read_suite(suite, workflow)))
        except TestFileError as exc:
            for d in exc.diagnostics:
                print(d.format(), file=sys.stderr)
            invalid += 1
        except BrokenPlugins as exc:
            print(exc.format(), file=sys.stderr)
            return exit_code_for(exc)
    if invalid:
        print(f"nothing run: {invalid} test file{'s' if invalid != 1 else ''} or workflow"
              f"{'s' if invalid != 1 else ''} cannot be used", file=sys.stderr)
        return exit_code_for("invalid")
    started = time.perf_counter()
    results: list[CaseResult] = []
    try:
        for suite, workflow, cases in planned:
            for case in cases:
                results.append(run_case(case, suite, workflow))
    except Exception as exc:  # a bug of wfexec's own, outside any run: one line, the traceback with --debug
        return report_error(exc, debug)
    seconds = time.perf_counter() - started
    measured = coverage_of([w for _, w, _ in planned], results)
    covered, total = _branch_totals(measured)
    if format == "json":
        from wfexec.commands.entrypoints import print_json

        print_json({"passed": sum(1 for r in results if r.passed), "failed": sum(1 for r in results if not r.passed),
                    "cases": [r.to_json() for r in results],
                    "coverage": {"branches": {"covered": covered, "total": total, "percent": _percent(covered, total)},
                                 "workflows": [c.to_json() for c in measured]}})
    else:
        sys.stdout.write(_text_report(results, measured if coverage or fail_under is not None else None, seconds))
    if junit is not None:
        write_output(junit, junit_xml(results, measured), option="--junit")
    code = exit_code_for("completed")
    if any(not r.passed for r in results):
        code = exit_code_for("failed")
    if fail_under is not None and (100.0 * covered / total if total else 100.0) < fail_under:
        print(f"error: branch coverage {_percent(covered, total):g}% is below --fail-under {fail_under:g}% — add "
              "cases for the branches listed as not taken", file=sys.stderr)
        code = exit_code_for("failed")
    return code
