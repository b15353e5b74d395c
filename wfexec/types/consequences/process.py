"""Consequences that run programs (v3 `run_command`, v2 `run_script`, `run_bash`, `run_python`).

No shell ever runs: a command is an argv list, each item one argument, so a
value from state reaches the program exactly as it is, spaces, quotes and
`; rm -rf` included. A command written as one string is split into words the
way a shell would split it, and only then are its `${...}` parts filled in,
each inside its own word; pipes, redirections, `&&` and `;` do not exist
there (write a script, or call `bash -c` explicitly in a list). When the
author does run a shell (`[bash, -c, CODE, ...]`), `${...}` is refused inside
CODE: values go in as arguments after it or through `env`. The one shell wfexec
starts itself is for blueprint v3's `interpreter: bash` beside a `command:`
string: there the `${...}` values reach the shell as environment variables,
as data.

The program's output is captured, never printed: `store_as` keeps it, the
trace (`--trace`) shows it, and a durable run keeps its end in the store for
`wfexec serve` (wfexec.durable.outputs).
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import threading
import time
from wfexec.records import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wfexec.language.documents import find_document
from wfexec.language.expressions import Template, to_text
from wfexec.types.consequences.inline_code import (FROM_INPUT, STDIN, code_places, env_split_string, language,
                                                 program_name, settings_from_environment)
from wfexec.types.registry import ActionFailed, TypeList
from wfexec.system import progress
from wfexec.system.subprocesses import EXIT_GRACE_SECONDS, done_with, kill_group, start

if TYPE_CHECKING:  # imported where a command starts: a run without one never pays for it
    import subprocess

TYPES = TypeList()

DEFAULT_TIMEOUT = 300
MAX_TIMEOUT = 30 * 24 * 3600  # longer overflows the clocks a wait uses
ERROR_LINES = 5      # lines of stderr quoted in a failure message
MAX_OUTPUT = 16 * 1024 * 1024  # characters of stdout (and of stderr) a command may write: it is kept in state
READ_CHUNK = 64 * 1024

ARGUMENT = {"type": ["string", "number", "boolean"]}
SCRIPT = {"type": "string", "description": "a script file, from the plugin root, else the workflow's folder, "
                                           "else the working directory"}
COMMON = {
    "args": {"type": "array", "items": ARGUMENT, "description": "arguments appended to the command"},
    "working_directory": {"type": "string", "description": "folder to run in, relative to the working directory"},
    "cwd": {"type": "string", "description": "same as working_directory"},
    "env": {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean", "null"]},
            "description": "variables added to the environment"},
    "venv": {"type": "string", "description": "a Python virtual environment to run in (its bin/ first on PATH)"},
    "timeout": {"type": "number", "exclusiveMinimum": 0,
                "description": f"seconds before the program is stopped (default {DEFAULT_TIMEOUT})"},
    "input": {"description": "text sent to the program's standard input (a mapping or list is sent as JSON)"},
    "allow_failure": {"type": "boolean", "description": "a non-zero exit code is not a failure"},
    "store_as": {"type": "string", "description": "the state path to store the result at"},
}
INTERPRETERS = ("auto", "bash", "sh", "python", "node", "ruby")
AUTO_INTERPRETERS = {".sh": "bash", ".bash": "bash", ".py": "python", ".js": "node", ".rb": "ruby"}
SHELL_OPERATORS = set("|&;<>")


@dataclass
class Completed:
    argv: list
    exit_code: int
    stdout: str
    stderr: str

    def as_state(self) -> dict:
        return {"exit_code": self.exit_code, "stdout": self.stdout, "stderr": self.stderr}


# -- building argv ------------------------------------------------------------

def _arguments(values: Any, what: str) -> list[str]:
    """Items of a list as argv entries; an item that was one `${...}` yielding a list adds each element."""
    if not isinstance(values, list):
        raise ActionFailed(f"`{what}` must be a list of arguments, got {type(values).__name__}",
                           f"write `{what}` as a YAML list: one item per argument")
    argv: list[str] = []
    for value in values:
        if isinstance(value, list):
            argv.extend(to_text(v) for v in value)
        else:
            argv.append(to_text(value))
    return argv


_PLACEHOLDER = re.compile("\x00(\\d+)\x00")


def _split_written(command: Any, ctx) -> list[str]:
    """Split a command string as written into words, then fill each word's `${...}` parts.

    Splitting before filling keeps every value inside the word it was written
    in, so data from state can never add arguments or operators.
    """
    parts = command.parts if isinstance(command, Template) else (command,)
    expressions: list[Any] = []
    text: list[str] = []
    for part in parts:
        if isinstance(part, str):
            if "\x00" in part:
                raise ActionFailed("the command contains a NUL character")
            text.append(part)
        else:
            text.append(f"\x00{len(expressions)}\x00")
            expressions.append(part)
    written = "".join(text)
    _refuse_shell_syntax(written)
    try:
        words = shlex.split(written)
    except ValueError as exc:
        raise ActionFailed(f"cannot split the command into words: {exc}",
                           "close the quote, or write `command` as a list") from None
    _refuse_values_in_code(words, ctx.call.params.get("input"), ctx.call.params.get("env"))
    argv = []
    for word in words:
        pieces = _PLACEHOLDER.split(word)  # literal, index, literal, index, ..., literal
        if len(pieces) == 3 and pieces[0] == pieces[2] == "":
            value = ctx.evaluate(expressions[int(pieces[1])])
            argv.extend(_arguments(value, "command") if isinstance(value, list) else [to_text(value)])
            continue
        argv.append("".join(piece if i % 2 == 0 else to_text(ctx.evaluate(expressions[int(piece)]))
                            for i, piece in enumerate(pieces)))
    return argv


def _refuse_shell_syntax(written: str) -> None:
    lexer = shlex.shlex(written, posix=False, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        operators = [token for token in lexer if set(token) <= SHELL_OPERATORS]
    except ValueError:
        return  # an open quote: shlex.split reports it next
    if operators:
        raise ActionFailed(
            f"the command uses shell syntax ({' '.join(dict.fromkeys(operators))}), but no shell runs it: "
            "write it as a script (`script:`) or as an argv list",
            "a string command is only split into words: quote an operator meant as plain text ('|'); for "
            "pipes, redirections, `&&` or `;`, put them in a script and run it with `script:`, or write the "
            "command as a list such as [bash, -c, 'a | b'] (never with `${...}` inside the shell text)")


def _is_templated(word: Any) -> bool:
    return isinstance(word, Template) or (isinstance(word, str) and "\x00" in word)


def _holds_template(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_holds_template(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_template(v) for v in value)
    return _is_templated(value)


def _refuse_values_in_code(words: list, written_input: Any, written_env: Any = None) -> None:
    """A `${...}` inside code would run a value from state as code: the one injection no argv prevents.

    The code may sit behind wrappers (`env`, `timeout`, `xargs`, `find -exec`, `sudo`...), be given to any
    interpreter (`bash -c`, `python3 -c`, `perl -e`, `awk PROGRAM`) or to a program that takes code in an option
    (`git -c alias.x=!…`, `make --eval`, `script -c`, `vim -c`), or come in on standard input (`bash -s`,
    `input:`), also as the words `xargs` adds to its command. Which program does what is inline_code.PROGRAMS.
    """
    for name in settings_from_environment(words):
        if isinstance(written_env, dict) and _holds_template(written_env.get(name)):
            raise ActionFailed(f"`${{...}}` in `env: {name}` would run a value from state as a command: "
                               f"`{program_name(words[0])}` takes that variable as a setting that runs one",
                               "give the setting a literal value, and the value from state as an argument")
    split = env_split_string(words, _is_templated)
    if split is not None and _is_templated(split):
        raise ActionFailed("`${...}` inside the string of `env -S` would run a value from state as a command line",
                           "write the command as a list, with the value as one argument")
    for program, code in code_places(words, _is_templated):
        if code is STDIN or code is FROM_INPUT:
            if not _holds_template(written_input):
                continue
            if code is FROM_INPUT:
                raise ActionFailed(
                    f"`${{...}}` in `input:` would be run as code: `xargs` puts its input into the command "
                    f"`{program}` runs here (in its code, or as the program itself)",
                    "keep the code literal and let xargs add the input after it as arguments "
                    "(xargs -0 sh -c 'echo \"$@\"' _), or pass the value through `env`")
            raise ActionFailed(
                f"`${{...}}` in `input:` would be run as code: `{program}` reads its program from standard input "
                "here", f"put the code in a script file, or pass the value as an argument ({program} -c CODE _ "
                "'${x}') or through `env`")
        if _is_templated(code):
            raise ActionFailed(
                f"`${{...}}` inside the code given to `{program}` would run a value from state as "
                f"{language(program)} code: pass it as an argument after the code (bash -c 'echo \"$1\"' _ "
                "'${x}') or through `env` (\"$NAME\" in the code)",
                "write `$${` for a shell variable such as `$${HOME}`")


def _command_argv(params, ctx) -> list[str]:
    written = ctx.call.params.get("command")
    if isinstance(written, list):
        _refuse_values_in_code(written, ctx.call.params.get("input"), ctx.call.params.get("env"))
    if isinstance(written, (str, Template)) and not isinstance(params["command"], list):
        return _split_written(written, ctx)
    command = params["command"]
    if isinstance(command, str):  # a value computed elsewhere (e.g. a handler calling another)
        return _split_written(command, ctx)
    return _arguments(command, "command")


def _find_script(script: str, ctx) -> Path:
    """A script is a plugin file like any document (plugin root, workflow folder), else a file of the
    working directory."""
    lookup = find_document(script, ctx.workflow.path)
    if lookup.found is not None:
        return lookup.found.absolute()
    in_cwd = Path(ctx.cwd) / Path(os.path.expanduser(script))
    if not Path(script).is_absolute() and in_cwd.is_file():
        return in_cwd.absolute()
    looked = lookup.looked_text() + ("" if Path(script).is_absolute() else f", then {in_cwd}")
    raise ActionFailed(f"script '{script}' not found (looked in {looked})",
                       "script paths resolve like documents (the plugin root, then the workflow's folder), "
                       "then from the working directory")


def _python(params, ctx) -> str:
    venv = _venv(params, ctx)
    if venv is None:
        return sys.executable
    return str(venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python"))


def _script_argv(params, ctx, interpreter: str) -> list[str]:
    script = _find_script(params["script"], ctx)
    if interpreter == "auto":
        interpreter = AUTO_INTERPRETERS.get(script.suffix.lower(), "direct")
    if interpreter == "direct":
        return [str(script)]
    program = _python(params, ctx) if interpreter == "python" else interpreter
    return [program, str(script)]


def _argv(params, ctx, interpreter: str | None) -> list[str]:
    has_command, has_script = "command" in params, "script" in params
    if has_command == has_script:
        raise ActionFailed(f"{ctx.call.type} needs exactly one of `command` "
                           "(a program and its arguments) or `script` (a script file)")
    if has_command:
        if "interpreter" in params:
            raise ActionFailed("`interpreter` applies to `script`, or to a `command` string of shell text "
                               f"({' or '.join(SHELLS)}), not to a `command` list",
                               "put the interpreter first in `command`, e.g. [python, tool.py]")
        argv = _command_argv(params, ctx)
    else:
        chosen = interpreter or params.get("interpreter", "auto")
        if chosen not in INTERPRETERS:
            raise ActionFailed(f"unknown interpreter '{chosen}'", f"use one of: {', '.join(INTERPRETERS)}")
        argv = _script_argv(params, ctx, chosen)
    argv += _arguments(params.get("args", []), "args")
    if not argv or not argv[0]:
        raise ActionFailed("the command is empty")
    return argv


# -- running ----------------------------------------------------------------

def _venv(params, ctx) -> Path | None:
    if "venv" not in params:
        return None
    venv = ctx.resolve_file(params["venv"])
    if not (venv / "pyvenv.cfg").is_file():
        raise ActionFailed(f"'{params['venv']}' is not a Python virtual environment (no pyvenv.cfg)",
                           "create it with `python -m venv`, or fix the path")
    return venv


def _environment(params, ctx) -> dict:
    env = dict(os.environ)
    venv = _venv(params, ctx)
    if venv is not None:
        env["VIRTUAL_ENV"] = str(venv)
        env["PATH"] = str(venv / ("Scripts" if os.name == "nt" else "bin")) + os.pathsep + env.get("PATH", "")
        env.pop("PYTHONHOME", None)
    extra = params.get("env", {})
    if not isinstance(extra, dict):
        raise ActionFailed(f"`env` must be a mapping of variable names to values, got {type(extra).__name__}")
    env.update({str(name): to_text(value) for name, value in extra.items()})
    return env


def _working_directory(params, ctx) -> Path:
    given = params.get("working_directory", params.get("cwd"))
    if given is None:
        return Path(ctx.cwd)
    folder = ctx.resolve_file(given)
    if not folder.is_dir():
        raise ActionFailed(f"working directory '{given}' does not exist or is not a folder")
    return folder


def _timeout(params) -> float:
    value = params.get("timeout", DEFAULT_TIMEOUT)
    try:
        seconds = float(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an integer of hundreds of digits
        seconds = 0
    if not 0 < seconds <= MAX_TIMEOUT:  # NaN fails this too
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        raise ActionFailed(f"`timeout` must be a positive number of seconds up to {MAX_TIMEOUT:,} (30 days), "
                           f"got {shown}")
    return seconds


def _shown(argv: list[str], limit: int = 120) -> str:
    text = shlex.join(argv)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _start(argv: list[str], cwd: Path, env: dict, has_input: bool) -> subprocess.Popen:
    import subprocess

    try:
        return start(argv, cwd=cwd, env=env, stdin=subprocess.PIPE if has_input else subprocess.DEVNULL,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8", errors="replace",
                     bufsize=1)
    except FileNotFoundError:
        program = argv[0]
        if os.path.isfile(os.path.join(cwd, program)):  # it exists, so the missing file is its #! interpreter
            raise ActionFailed(f"cannot run '{program}': the interpreter named on its #! line was not found",
                               "fix the #! line, or set `interpreter`") from None
        if os.sep in program or (os.altsep and os.altsep in program):
            raise ActionFailed(f"'{program}' not found", "check the path") from None
        raise ActionFailed(f"command '{program}' not found on PATH", "install it, or give its full path") from None
    except PermissionError:
        raise ActionFailed(f"'{argv[0]}' is not executable",
                           "make it executable (chmod +x), or set `interpreter`") from None
    except OSError as exc:
        raise ActionFailed(f"cannot run '{argv[0]}': {exc.strerror or exc}",
                           "a script run directly needs a #! line; or set `interpreter`") from None


class _Output(threading.Thread):
    """Reads one output stream to its end, passing each line to the trace as it arrives when tracing. Past
    MAX_OUTPUT characters it keeps nothing more and calls `overflowed` (which stops the program): a command's
    output is kept in state, and state is kept whole in memory and in the store."""

    def __init__(self, stream, ctx, name: str, overflowed):
        super().__init__(daemon=True)
        self.stream = stream
        self.name = name
        self.show = _line_shower(ctx, f"{name}| ")
        self.chunks: list[str] = []
        self.kept = 0
        self.overflowed = overflowed
        self.over = False

    def run(self) -> None:
        try:
            while line := self.stream.readline(READ_CHUNK):  # a bounded read: one line may be endless
                self.kept += len(line)
                if self.kept > MAX_OUTPUT:
                    self.over = True
                    self.chunks.clear()
                    self.overflowed()
                    return
                self.chunks.append(line)
                if self.show is not None:
                    self.show(line)
        except (OSError, ValueError):  # closed under us once the group was killed
            pass

    def text(self) -> str:
        return "".join(self.chunks)


def _line_shower(ctx, prefix: str):
    """What each line a program writes goes to: the trace, and the run's kept output (ctx.program_output, with
    its lookups done once: a chatty program writes thousands of lines a second); None when neither wants it."""
    run = ctx.run
    trace = run.io.trace if run.io.tracing else None
    keep = run.record_output if run.keeps_output else None
    if trace is None and keep is None:
        return None

    def show(line: str) -> None:
        text = prefix + line.rstrip("\n")
        if trace is not None:
            trace("  " + text)
        if keep is not None:
            keep(text)

    return show


def _feed(process: subprocess.Popen, text: str) -> None:
    assert process.stdin is not None  # started with stdin=PIPE when there is text to feed
    try:
        process.stdin.write(text)
        process.stdin.close()
    except (OSError, ValueError):  # the program closed its stdin: its business
        pass


def _execute(argv: list[str], params, ctx) -> Completed:
    import subprocess

    cwd = _working_directory(params, ctx)
    env = _environment(params, ctx)
    timeout = _timeout(params)
    stdin = params.get("input")
    text_in = None if stdin is None else to_text(stdin)
    ctx.program_output(f"$ {_shown(argv)}" + (f"   (in {cwd})" if cwd != Path(ctx.cwd) else ""))
    process = _start(argv, cwd, env, text_in is not None)
    progress.running(_shown(argv, 60))
    # Threads read the pipes rather than communicate(): output reaches --trace as it comes, and a command
    # that exited is done even while a background child it left still holds the pipes.
    readers = [_Output(process.stdout, ctx, "stdout", lambda: kill_group(process)),
               _Output(process.stderr, ctx, "stderr", lambda: kill_group(process))]
    try:
        for reader in readers:
            reader.start()
        if text_in is not None:
            threading.Thread(target=_feed, args=(process, text_in), daemon=True).start()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(process)
            process.wait()
            _join(readers, 5)
            unit = "second" if timeout == 1 else "seconds"
            raise ActionFailed(f"`{_shown(argv)}` did not finish within {timeout:g} {unit} and was stopped",
                               "raise `timeout:` (seconds) if it needs longer") from None
        deadline = time.monotonic() + EXIT_GRACE_SECONDS
        _join(readers, EXIT_GRACE_SECONDS, deadline)
    except BaseException:  # Ctrl-C, SIGTERM and SIGHUP included: never leave the program running behind us
        kill_group(process)
        process.wait()
        raise
    finally:
        progress.running("")
        done_with(process)  # a background child left holding the pipes goes with its group
        _join(readers, 1)
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
    ctx.program_output(f"exit code {process.returncode}")
    for reader in readers:
        if reader.over:
            raise ActionFailed(f"`{_shown(argv)}` wrote more than {MAX_OUTPUT // (1024 * 1024)} MiB to {reader.name} "
                               "and was stopped: a command's output is kept in the run's state",
                               "send large output to a file (a script with `> out.txt`, or the program's own "
                               "option) and read from it only what the workflow needs")
    return Completed(argv, process.returncode, readers[0].text(), readers[1].text())


def _join(readers: list, seconds: float, deadline: float | None = None) -> None:
    deadline = deadline or time.monotonic() + seconds
    for reader in readers:
        if reader.ident is not None:  # a stop signal may have come before it started
            reader.join(max(0.0, deadline - time.monotonic()))


def _last_lines(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[-ERROR_LINES:])


def _check_exit(completed: Completed, params) -> None:
    code = completed.exit_code
    if code == 0 or params.get("allow_failure", False):
        return
    how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
    tail = _last_lines(completed.stderr) or _last_lines(completed.stdout)
    raise ActionFailed(f"`{_shown(completed.argv)}` {how}" + (f":\n{tail}" if tail else " (no output)"),
                       "set `allow_failure: true` to treat a non-zero exit as data")


def _run(params, ctx, interpreter: str | None = None) -> Completed:
    return _execute(_argv(params, ctx, interpreter), params, ctx)


# -- the types ----------------------------------------------------------------

@TYPES.consequence("run_command", {
    "command": {"type": ["array", "string"], "items": ARGUMENT,
                "description": "the program and its arguments as a list (a string is split into words; "
                               "no shell runs it)"},
    "script": SCRIPT,
    "interpreter": {"enum": list(INTERPRETERS), "description": "for `script`; auto picks by extension; bash or sh "
                                                                "with a `command` string runs it as that shell's code"},
    **COMMON,
    "store_as": {"type": "string", "description": "the state path for {exit_code, stdout, stderr} (in a v8 file "
                                                  "and for shell text: the trimmed stdout)"},
    "keep": {"enum": ["result", "stdout"],
             "description": "what store_as keeps: result ({exit_code, stdout, stderr}; the default) or stdout "
                            "(trimmed; the default in a v8 file and for shell text)"},
}, [], paths=("store_as",), effects=("process",), idempotent=False, era_params={"v8": {"keep": "stdout"}})
def run_command(params, ctx):
    """Run a program (`command`: argv list) or a `script` without a shell, or a `command` string with `interpreter:
    bash` as bash code; `store_as` gets exit_code/stdout/stderr (the trimmed stdout in a blueprint-lib v8 file and
    for bash code, as their catalogues say)."""
    shell_text = _shell_text(params, ctx)
    if shell_text is not None:
        completed = _run_shell_code(shell_text, params, ctx)
        keep = params.get("keep", "stdout")
    else:
        completed = _run(params, ctx)
        keep = params.get("keep")
    if "store_as" in params:
        ctx.set(params["store_as"], completed.stdout.strip() if keep == "stdout" else completed.as_state())
    _check_exit(completed, params)


SHELLS = ("bash", "sh")


def _shell_text(params, ctx) -> Any:
    """The command as written when it is code for the named shell, else None.

    hiivmind-blueprint's v3 skills write `interpreter: bash` beside a `command:` that is bash text (pipes,
    `$(...)`, several lines, `${...}` from state), and read what it echoes from `store_in`: blueprint-lib v3 ran
    it as `Bash(...)` and kept `stdout.trim()`. A list stays an argv, refused with an interpreter as before.
    """
    written = ctx.call.params.get("command")
    if params.get("interpreter") in SHELLS and "script" not in params and isinstance(written, (str, Template)):
        return written
    return None


def _run_shell_code(written: Any, params, ctx) -> Completed:
    code, values = shell_text_with_values(written, ctx)
    extra = params.get("env", {})
    if not isinstance(extra, dict):
        raise ActionFailed(f"`env` must be a mapping of variable names to values, got {type(extra).__name__}")
    shell = params["interpreter"]
    argv = [shell, "-c", code, shell, *_arguments(params.get("args", []), "args")]  # args are $1, $2, ...
    return _execute(argv, {**params, "env": {**extra, **values}}, ctx)


def _run_v2(params, ctx, interpreter: str) -> None:
    """The v2 script types store the trimmed standard output, as blueprint-lib v2 defined them."""
    completed = _run(params, ctx, interpreter)
    if "store_as" in params:
        ctx.set(params["store_as"], completed.stdout.strip())
    _check_exit(completed, params)


V2_PARAMS = {"script": SCRIPT, **COMMON}


@TYPES.consequence("run_script", V2_PARAMS, ["script"], paths=("store_as",), effects=("process",),
                   idempotent=False)
def run_script(params, ctx):
    """v2: run a script file, interpreter by extension; `store_as` keeps its trimmed stdout."""
    _run_v2(params, ctx, "auto")


@TYPES.consequence("run_bash", V2_PARAMS, ["script"], paths=("store_as",), effects=("process",),
                   idempotent=False)
def run_bash(params, ctx):
    """v2: run a script file with bash; `store_as` keeps its trimmed stdout."""
    _run_v2(params, ctx, "bash")


@TYPES.consequence("run_python", V2_PARAMS, ["script"], paths=("store_as",), effects=("process",),
                   idempotent=False)
def run_python(params, ctx):
    """v2: run a Python script file (in `venv` if given); `store_as` keeps its trimmed stdout."""
    _run_v2(params, ctx, "python")


# -- shell text with values kept as data (bash_check, bash_exec, install_tool) --

SHELL_VALUE_PREFIX = "WFEXEC_V"


def shell_text_with_values(written: Any, ctx) -> tuple[str, dict]:
    """`bash -c` code from shell text written with `${...}` in it, and the environment holding the values.

    Each `${expr}` becomes a reference to an environment variable that holds
    its value, quoted for where it stands (outside quotes, inside "..." or
    inside '...'), so a value is always data: a path holding `'; rm -rf ~`
    reaches the shell as those characters, never as code.
    """
    from wfexec.language.expressions import compile_value

    compiled = compile_value(written) if isinstance(written, str) else written
    parts = compiled.parts if isinstance(compiled, Template) else (to_text(compiled),)
    text: list[str] = []
    values: dict[str, str] = {}
    quote = ""        # "", "'" or '"': the quoting in force where the text has got to
    escaped = False
    for part in parts:
        if isinstance(part, str):
            for char in part:
                text.append(char)
                if escaped:
                    escaped = False
                elif char == "\\" and quote != "'":
                    escaped = True
                elif char in "'\"" and quote in ("", char):
                    quote = "" if quote == char else char
            continue
        name = f"{SHELL_VALUE_PREFIX}{len(values) + 1}"
        # In shell text `${PWD}` means the folder the shell runs in, which is the run's working
        # directory, not the folder wfexec was started from.
        values[name] = str(ctx.cwd) if part.source.strip() == "PWD" else to_text(ctx.evaluate(part))
        reference = {"": f'"${{{name}}}"', '"': f"${{{name}}}", "'": f"'\"${{{name}}}\"'"}[quote]
        text.append(reference)
    return "".join(text), values


def run_shell_text(written: Any, ctx, timeout: float = DEFAULT_TIMEOUT) -> Completed:
    """Run shell text (as written, `${...}` passed as environment variables) with `bash -c` in the working directory.

    Raises ActionFailed when bash is missing or the time runs out; the exit code is the caller's to judge.
    """
    code, values = shell_text_with_values(written, ctx)
    return _execute(["bash", "-c", code], {"env": values, "timeout": timeout}, ctx)


def check_exit(completed: Completed, allow_failure: bool = False) -> None:
    """ActionFailed quoting the end of stderr when the program exited non-zero (unless allowed)."""
    _check_exit(completed, {"allow_failure": allow_failure})
