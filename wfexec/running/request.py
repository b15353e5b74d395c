"""What a run is asked to do, whichever door asks: the run request, and each of its options declared once.

Every door builds a `RunRequest`: the command line (`wfexec run`, `resume`, `states`), the Python API
(`wfexec.run`, `wfexec.resume`), the MCP tools (`run`, `answer`, `resume`), the Temporal client (`--temporal`) and
the web page's launch (a `wfexec run` process). Each option is one attribute of the class below: its name, its
type (the annotation), its default and its help, and the doors that offer it. The typer options of `wfexec.cli`,
the MCP tools' input schemas and the API's keyword arguments are made from these declarations
(`options_of`, `api_signature`), so a default cannot differ between doors; tests/running/test_run_request.py
checks each door against this table.

The defaults, once (docs/guide/api.md says the same): a run is recorded in the run store (`store`: else
$WFEXEC_STORE, else .wfexec/runs.db) so that it can be resumed from any process, unless `ephemeral`; it has
`max_steps` 10,000; it asks nobody unless `interactive` (the command line sets it at a terminal, unless
`--non-interactive`); each given answer is used once.

Cheap to import: `wfexec run` builds one of these on every start (no dataclass machinery, nothing but the
standard library's `typing` names).
"""

from __future__ import annotations

from pathlib import Path

from wfexec.errors import WfexecError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Sequence

# The doors, and their commands, tools and functions that start or continue a run.
CLI_COMMANDS = ("run", "resume", "states")
API_FUNCTIONS = ("run", "resume")
MCP_TOOLS = ("run", "answer", "resume")

DEFAULT_MAX_STEPS = 10_000
# A budget larger than any run can take: past it the number is a typo, not a budget.
MAX_STEPS = 1_000_000_000
DURABILITIES = ("normal", "full")
FORMATS = ("text", "json")
ON_ASK = ("pause", "reject")


class Option:
    """One option of a run: a field of `RunRequest` (its name and annotated type are the attribute's, `default` its
    default) and how each door offers it.

    `flag` is its command-line spelling (None: not on the command line) for the commands in `cli`; `form` says how
    the command line writes it when that differs from the field's type: `pairs` (repeatable KEY=VALUE, a mapping
    in the request), `list` (repeatable); `short`, `metavar`, `envvar`, `min`, `max` and `choices` are typer's,
    `secondary` a boolean flag's `--no-…` spelling. The typer parameter has the field's name. `api` and `mcp` name
    the API functions and MCP tools that take it as a keyword argument of the same name."""

    name: str
    default: Any
    help: str
    flag: str | None
    short: str | None
    metavar: str | None
    envvar: str | None
    cli: tuple[str, ...]
    api: tuple[str, ...]
    mcp: tuple[str, ...]
    form: str | None
    min: float | None
    max: float | None
    choices: tuple[str, ...] | None
    secondary: str | None
    __slots__ = ("name", "default", "help", "flag", "short", "metavar", "envvar", "cli", "api", "mcp", "form",
                 "min", "max", "choices", "secondary")

    # Each keyword written out (not a loop over the slots): the class body makes forty of these on every start.
    def __init__(self, default: Any, help: str, *, flag: str | None = None, short: str | None = None,
                 metavar: str | None = None, envvar: str | None = None, cli: tuple[str, ...] = (),
                 api: tuple[str, ...] = (), mcp: tuple[str, ...] = (), form: str | None = None,
                 min: float | None = None, max: float | None = None, choices: tuple[str, ...] | None = None,
                 secondary: str | None = None):
        self.name = ""  # the attribute's (__set_name__)
        self.default, self.help, self.flag, self.short, self.metavar, self.envvar = \
            default, help, flag, short, metavar, envvar
        self.cli, self.api, self.mcp, self.form, self.min, self.max = cli, api, mcp, form, min, max
        self.choices, self.secondary = choices, secondary

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def fresh_default(self) -> Any:
        """The default, a new copy of it when it is a mapping or a list (each request its own)."""
        return type(self.default)(self.default) if isinstance(self.default, (dict, list)) else self.default

    def __repr__(self) -> str:
        return f"Option({self.name}={self.default!r})"


class OptionError(WfexecError, ValueError):
    """A run option given a value its declaration refuses (its type, its bounds, its choices), refused by the run
    request itself before anything is read or recorded, whichever door gave it. `problem` is said in the command
    line's words (typer's); `named(...)` says it of the option as a door spells it (the command line: its flag;
    the API and MCP: its name, as `message` does)."""

    run_id = None  # no run was recorded

    def __init__(self, option: str, value: Any, problem: str):
        self.option, self.value, self.problem = option, value, problem
        super().__init__(self.named(option))

    def named(self, name: str) -> str:
        shown = repr(self.value)
        return f"Invalid value for '{name}': {self.problem}, not {shown if len(shown) <= 80 else shown[:77] + '...'}"


def option(default: Any, help: str, **how: Any) -> Any:
    """An `Option`, typed as its field's value for the readers of `RunRequest` (mypy among them)."""
    return Option(default, help, **how)


_RUN = ("run",)
_RUN_STATES = ("run", "states")
_ALL = CLI_COMMANDS
_RESUME = ("resume",)


class RunRequest:
    """What a door asks of a run: which workflow (or run, to continue), with what, where, and how far."""

    # -- what runs ------------------------------------------------------------------------------------------------
    path: Path | None = option(None, "A workflow.yaml file or a skill folder containing one.")
    run_id: str | None = option(None, "The run to continue: its id (or a unique prefix of 4 characters or more).")
    inputs: dict[str, Any] = option({}, "The workflow's inputs, by name (checked against its input schema).",
                                    api=_RUN, mcp=_RUN)
    # The command line gives inputs as text: each is read by the type its input schema declares (and a states
    # folder takes the text whole, as its first state's {{input}}).
    text_inputs: list[str] = option([], "An input as KEY=VALUE (repeatable).", flag="--input", short="-i",
                                    metavar="KEY=VALUE", form="list", cli=_RUN)
    input_file: Path | None = option(None, "A YAML/JSON file of inputs.", flag="--input-file", metavar="FILE",
                                     cli=_RUN)
    overrides: dict[str, Any] = option(
        {}, "Set a state path before the run: PATH=VALUE (repeatable).", flag="--set", metavar="PATH=VALUE",
        form="pairs", cli=_RUN, api=_RUN)
    answers: dict[str, Any] = option(
        {}, "Answer a question: NODE=OPTION_ID (or text), used once (repeatable: in turn; 'NODE*=ID' every time).",
        flag="--answer", short="-a", metavar="NODE=ANSWER", form="pairs", cli=_ALL,
        api=API_FUNCTIONS, mcp=MCP_TOOLS)
    answer_files: list[Path] = option(
        [], "A YAML file mapping node ids to answers (a list: used in turn).", flag="--answers", metavar="FILE",
        form="list", cli=("run", "resume"))
    allow_write: list[Path] = option(
        [], "A folder outside the working directory that steps may write in where a `${...}` template names it "
            "(repeatable; given again to resume).", flag="--allow-write", metavar="DIR", form="list",
        cli=("run", "resume"), api=API_FUNCTIONS)
    # -- how far, and who answers ---------------------------------------------------------------------------------
    interactive: bool = option(False, "Ask the person at the terminal the questions no answer was given for.",
                               api=API_FUNCTIONS)
    non_interactive: bool = option(False, "Never prompt; a question without an answer exits 3.",
                                   flag="--non-interactive", cli=_ALL)
    max_steps: int = option(DEFAULT_MAX_STEPS, "Stop after this many steps (exit 4); on resume, counting earlier "
                                               "steps.", flag="--max-steps", metavar="N", min=1, max=MAX_STEPS,
                            cli=_ALL, api=API_FUNCTIONS, mcp=MCP_TOOLS)
    dry_run: bool = option(False, "Run only what changes nothing outside the run: print what each effect would "
                                  "do, and the LLM prompts.", flag="--dry-run", cli=("run", "resume"), api=_RUN)
    # -- where it is recorded -------------------------------------------------------------------------------------
    store: Path | None = option(None, "The run store (default .wfexec/runs.db; env WFEXEC_STORE).", flag="--store",
                                metavar="FILE", envvar="WFEXEC_STORE", cli=_ALL, api=API_FUNCTIONS)
    ephemeral: bool = option(False, "Do not record the run in the store (no resume).", flag="--ephemeral",
                             cli=_RUN_STATES, api=_RUN)
    durability: str | None = option(
        None, "normal: a commit survives a kill; full: a power cut too (an fsync per commit; env WFEXEC_DURABILITY; "
              "default normal).", flag="--durability", envvar="WFEXEC_DURABILITY", choices=DURABILITIES, cli=_ALL,
        api=API_FUNCTIONS)
    temporal: str | None = option(None, "Use the Temporal cluster at HOST:PORT instead of the run store (needs "
                                        "wfexec[temporal]; env WFEXEC_TEMPORAL).", flag="--temporal",
                                  metavar="HOST:PORT", envvar="WFEXEC_TEMPORAL", cli=("run", "resume"))
    task_queue: str = option("wfexec", "The Temporal task queue the workers serve (with --temporal).",
                             flag="--task-queue", metavar="QUEUE", cli=("run", "resume"))
    # -- the LLM --------------------------------------------------------------------------------------------------
    backend: Any = option(None, "The LLM backend: claude, claude:model=opus, command:PROGRAM ARGS, replay:FILE "
                                "(the API also takes a Backend object).", flag="--backend", metavar="SPEC",
                          envvar="WFEXEC_BACKEND", cli=_ALL, api=API_FUNCTIONS)
    record: Path | None = option(None, "Write every LLM reply and answer to a cassette.", flag="--record",
                                 metavar="FILE", cli=_ALL, api=API_FUNCTIONS)
    replay: Path | None = option(None, "Answer LLM steps and questions from a cassette.", flag="--replay",
                                 metavar="FILE", cli=_ALL, api=API_FUNCTIONS)
    # -- continuing a run -----------------------------------------------------------------------------------------
    rerun: bool = option(False, "Run again the step that was in flight when the run stopped.", flag="--rerun",
                         cli=_RESUME, api=_RESUME, mcp=_RESUME)
    skip: bool = option(False, "Skip the step that was in flight, as if it succeeded.", flag="--skip", cli=_RESUME,
                        api=_RESUME, mcp=_RESUME)
    accept_changes: bool = option(False, "Continue although nodes that already ran have changed.",
                                  flag="--accept-changes", cli=_RESUME, api=_RESUME, mcp=_RESUME)
    take_over: bool = option(False, "Drive a run whose lease names a process on another machine, once that "
                                    "process is surely gone (a replaced container).", flag="--take-over",
                             cli=_RESUME, api=_RESUME, mcp=_RESUME)
    # -- what the command line shows ------------------------------------------------------------------------------
    trace: bool = option(False, "Print each node, action, condition and route (each state, tag and script output) "
                                "to stderr.", flag="--trace", cli=_ALL)
    format: str = option("text", "text or json.", flag="--format", choices=FORMATS, cli=_ALL)
    state_out: Path | None = option(None, "Write the final state as JSON here.", flag="--state-out", metavar="FILE",
                                    cli=("run", "resume"))
    record_case: Path | None = option(
        None, "Write this run as a test case for `wfexec test` into FILE (tests/NAME.yaml): inputs, answers, "
              "replies, ending, state.", flag="--record-case", metavar="FILE", cli=_RUN)
    record_state: list[str] = option(
        [], "With --record-case: expect the final state at PATH (repeatable; default: all of it).",
        flag="--record-state", metavar="PATH", form="list", cli=_RUN)
    # -- a states folder (`wfexec states`) ------------------------------------------------------------------------
    agent_input: str | None = option(None, "{{input}} of the first state.", flag="--input", short="-i",
                                     metavar="TEXT", cli=("states",))
    start: str | None = option(None, "The first state (default START).", flag="--start", metavar="STATE",
                               cli=("states",))
    budget_usd: float | None = option(None, "Stop before LLM calls once this much was spent.", flag="--budget-usd",
                                      min=0, metavar="USD", cli=("states",))
    timeout: float | None = option(None, "Inactivity timeout per state (0: none).", flag="--timeout", min=0,
                                   metavar="SECONDS", cli=("states",))
    model: str | None = option(None, "The model for .md states (backend permitting).", flag="--model",
                               cli=("states",))
    effort: str | None = option(None, "The effort for .md states: low, medium, high (backend permitting).",
                                flag="--effort", metavar="LEVEL", cli=("states",))
    on_ask: str = option("pause", "pause: an <ask> parks the run; reject: states that may ask are refused before "
                                  "any runs.", flag="--on-ask", choices=ON_ASK, cli=("states",))
    no_wait: bool = option(False, "On a usage limit, stop (exit 4) instead of waiting for its reset.",
                           flag="--no-wait", cli=("states",))
    workflow_id: str | None = option(None, "{{workflow_id}} / $RAYMOND_WORKFLOW_ID (default from the time).",
                                     flag="--workflow-id", metavar="ID", cli=("states",))
    continue_session: bool = option(False, "The first LLM turn branches the latest session of this folder.",
                                    flag="--continue-session", cli=("states",))
    no_debug: bool = option(False, "Write no debug files to .raymond/debug/.", flag="--no-debug", cli=("states",))
    dangerously_skip_permissions: bool | None = option(
        None, "Let the agent use any tool without asking (the default); --no-…: Claude Code's acceptEdits mode, "
              "pi's read/edit/write/grep/find/ls.", flag="--dangerously-skip-permissions",
        secondary="--no-dangerously-skip-permissions", cli=("states",))
    # -- not options: what the command line's own flags add --------------------------------------------------------
    debug: bool = option(False, "Show Python tracebacks for internal errors (`wfexec --debug`).")

    _OPTIONS: dict[str, Option]  # filled below
    # Set by the command line while it runs (not asked for): the CaseRecorder of --record-case and what it was given.
    case: dict | None

    def __init__(self, **given: Any):
        options = RunRequest._OPTIONS
        values = {name: spec.fresh_default() for name, spec in options.items()}
        for name, value in given.items():
            spec = options.get(name)
            if spec is None:
                raise TypeError(f"a run request has no option {name!r}")
            if value is not spec.default:
                problem = _misfit(spec, value)
                if problem is not None:
                    raise OptionError(name, value, problem)
            values[name] = value
        values["answers"] = _answers_form(values["answers"])
        values["case"] = None
        self.__dict__.update(values)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a run request is not changed ({name}): make another with replace()")

    def replace(self, **changes: Any) -> "RunRequest":
        """This request with `changes`; `case` (the command line's test-case recorder) included."""
        case = changes.pop("case", self.case)
        made = RunRequest(**{**{name: self.__dict__[name] for name in RunRequest._OPTIONS}, **changes})
        made.__dict__["case"] = case
        return made

    @property
    def json_output(self) -> bool:
        return self.format == "json"

    def asked(self) -> dict[str, Any]:
        """The options given a value other than their default, by name."""
        return {name: self.__dict__[name] for name, spec in RunRequest._OPTIONS.items()
                if self.__dict__[name] != spec.default}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RunRequest) and self.asked() == other.asked()

    __hash__ = None  # type: ignore[assignment]  # mutable mappings inside: not a key

    def __repr__(self) -> str:
        return f"RunRequest({', '.join(f'{k}={v!r}' for k, v in self.asked().items())})"


RunRequest._OPTIONS = {name: spec for name, spec in vars(RunRequest).items() if isinstance(spec, Option)}


def _misfit(spec: Option, value: Any) -> str | None:
    """What is wrong with `value` for the option `spec` (its declared type, bounds and choices), in typer's words
    (what `wfexec run --max-steps 0` says); None when it fits. A path may be given as text, a list as a tuple."""
    import os

    declared = RunRequest.__annotations__[spec.name]
    kind = declared.removesuffix(" | None")
    if value is None:
        return None if kind != declared or kind == "Any" else _WANTED[kind.partition("[")[0]]
    if kind == "int" or kind == "float":
        if isinstance(value, bool) or not isinstance(value, int if kind == "int" else (int, float)):
            return _WANTED[kind]
        if value != value or value in (float("inf"), float("-inf")):
            return "Input should be a finite number"
        if spec.min is not None and value < spec.min:
            return f"Input should be greater than or equal to {_number(spec.min)}"
        if spec.max is not None and value > spec.max:
            return f"Input should be less than or equal to {_number(spec.max)}"
    elif kind == "bool":
        if not isinstance(value, bool):
            return _WANTED[kind]
    elif kind == "str":
        if not isinstance(value, str):
            return _WANTED[kind]
        if spec.choices and value not in spec.choices:
            return f"Input should be {', '.join(repr(c) for c in spec.choices[:-1])} or {spec.choices[-1]!r}"
    elif kind == "Path":
        if not isinstance(value, (str, os.PathLike)):
            return _WANTED[kind]
    elif kind.startswith("dict["):
        if not isinstance(value, dict):
            return _WANTED["dict"]
    elif kind.startswith("list["):
        if not isinstance(value, (list, tuple)):
            return _WANTED["list"]
        item = kind[len("list["):-1]
        if any(not isinstance(each, str if item == "str" else (str, os.PathLike)) for each in value):
            return f"Input should be a list of {'strings' if item == 'str' else 'paths'}"
    return None


def _number(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else str(bound)


_WANTED = {"int": "Input should be a valid integer", "float": "Input should be a valid number",
           "bool": "Input should be a valid boolean", "str": "Input should be a valid string",
           "Path": "Input should be a valid path", "dict": "Input should be a valid dictionary",
           "list": "Input should be a valid list"}


def _answers_form(given: Any) -> dict[str, list]:
    """Answers as `Answers(...)` takes them, in one form whichever door gave them: node (`NODE*` to repeat) → the
    answers in turn. A door's {"ask": "yes"} and the command line's `--answer ask=yes` are the same request."""
    if not given:
        return {}
    if not isinstance(given, dict):
        raise TypeError(f"answers map a node id to an answer (or a list of answers), not {type(given).__name__}")
    return {str(node): list(value) if isinstance(value, (list, tuple)) else [value] for node, value in given.items()}


def options() -> dict[str, Option]:
    """Every declared option, by name, in declaration order."""
    return dict(RunRequest._OPTIONS)


def options_of(door: str, name: str) -> list[Option]:
    """The options `door` ("cli", "api" or "mcp") offers at its command, function or tool `name`, in order."""
    return [spec for spec in RunRequest._OPTIONS.values() if name in getattr(spec, door)]


def api_signature(function: str, leading: list[tuple[str, Any]], extra: list[tuple[str, Any, str]]):
    """The signature of the API function `function` (run, resume): its positional parameters `leading` (name,
    annotation), then a keyword argument for each option it takes, with the declared default and type, then the
    API's own Python-object keywords `extra` (name, default, annotation)."""
    import inspect

    hints = RunRequest.__annotations__
    parameters = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation)
                  for name, annotation in leading]
    parameters += [inspect.Parameter(spec.name, inspect.Parameter.KEYWORD_ONLY, default=spec.default,
                                     annotation=hints[spec.name]) for spec in options_of("api", function)]
    parameters += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
                   for name, default, annotation in extra]
    return inspect.Signature(parameters)


def pairs_to_dict(pairs: Sequence[str], what: str) -> dict[str, list[str]]:
    """Repeatable `KEY=VALUE` texts as a mapping of each key to its values in turn; ValueError names a malformed
    one."""
    given: dict[str, list[str]] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"{what} '{pair}' must look like {'NODE=ANSWER' if what == '--answer' else 'KEY=VALUE'}")
        given.setdefault(key, []).append(value)
    return given


def command_line(request: RunRequest, command: str) -> list[str]:
    """`wfexec COMMAND ...`'s words (without `wfexec`) asking for `request`: what a door that starts the command
    line in a process of its own (the web page's launch) gives it. Only the options the command takes, and only
    those not at their default."""
    words = [command, str(request.run_id if command == "resume" else request.path)]
    asked = request.asked()
    for spec in options_of("cli", command):
        if spec.name not in asked or spec.flag is None:
            continue
        value = asked[spec.name]
        if spec.form == "pairs":
            words += [part for key, values in value.items() for each in values
                      for part in (spec.flag, f"{key}={each}")]
        elif spec.form == "list":
            words += [part for each in value for part in (spec.flag, str(each))]
        elif value is True:
            words.append(spec.flag)
        elif value is False and spec.secondary:
            words.append(spec.secondary)
        else:
            words += [spec.flag, str(value)]
    return words
