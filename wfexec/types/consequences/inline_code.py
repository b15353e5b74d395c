"""Finding the code in a command line: the text a program will run as code, behind any wrappers.

A `${...}` value is safe as an argument but not as code. `bash -c CODE`,
`python3 -c CODE`, `perl -e CODE`, `awk PROGRAM` run a word as code; `bash -s`,
or an interpreter with no script, runs its standard input. Programs that start
another program are looked through: `env X=1 timeout 5 bash -c CODE` runs CODE
all the same, and so do `find -exec`, and `xargs`, which adds its standard input
to the command it runs. Some programs take code in an option without being
interpreters: `git -c alias.x=!CODE`, `make --eval`, `script -c`, `vim -c`.

Each program is one row of PROGRAMS, saying how it passes code on; the walk
below reads only the table, so supporting another wrapper is one row.
"""

from __future__ import annotations

import os
import re
from wfexec.records import dataclass
from wfexec.system.patterns import lazy
from typing import Any, Iterator, Mapping

STDIN = "standard input"
# xargs's input, which becomes words of the command it runs: code when it fills the code's place.
FROM_INPUT = "arguments from standard input"

_NONE: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Passes:
    """How one program passes code on. A field left at its default means the program does not do that."""

    # -- its own options
    value_options: frozenset[str] = _NONE   # take a value that is neither code nor a command (skipped with it)
    code_options: frozenset[str] = _NONE    # the value is code: `-c CODE`, `-cCODE`, `--eval=CODE`, `eval CODE`
    code_when: re.Pattern | None = None     # ...only when the value's `key=` matches (git -c alias.x=!…)
    code_in_cluster: bool = False           # the code letter may sit anywhere in a cluster (`bash -euxc CODE`)
    code_prefix: str = ""                   # a word starting with it is code (vim's `+CMD`; `+N` is a line)
    repeats: bool = False                   # options go on after a code option (`perl -e A -e B`, `vim -c`)
    script_options: frozenset[str] = _NONE  # take a script file; `-` reads it from standard input (make -f -)
    stdin_options: frozenset[str] = _NONE   # make it read its program from standard input (`bash -s`, `vim -es`)
    runs_stdin: str = ""                    # "no-operand": without a script, its program is standard input;
    #                                         "no-code": without a code option (script's interactive shell)
    first_operand_is_code: bool = False     # awk, sed, watch
    remote_command: bool = False            # ssh: every word after the host is one remote shell command
    language: str = ""                      # what the code is, for messages (default: the program's name)
    # -- the command it runs
    runs_command: bool = False              # after its options and `operands`, the words are a command it runs
    operands: int = 0                       # operands before that command (timeout's DURATION, chroot's DIR)
    assignments: bool = False               # NAME=VALUE words may come before the command (env)
    split_options: frozenset[str] = _NONE   # the value is a command line it splits and runs (env -S)
    command_options: frozenset[str] = _NONE  # the words after it, to `;` or `+`, are a command (find -exec)
    input_as_arguments: bool = False        # its standard input becomes words of the command (xargs)
    replace_options: Mapping[str, str] | None = None  # option -> default string (""=takes a value) that input
    #                                                     replaces inside the command's words (xargs -I {})
    assignments_are_code: bool = False      # NAME=VALUE operands are evaluated (make: `X=$(shell …)`)
    env_settings: frozenset[str] = _NONE    # `KEY=ENVNAME`: the variable's value is the setting (git --config-env)


def _options(*names: str) -> frozenset[str]:
    return frozenset(names)


def _wrapper(*value_options: str, operands: int = 0, **more) -> Passes:
    return Passes(value_options=_options(*value_options), runs_command=True, operands=operands, **more)


def _interpreter(code: tuple[str, ...], values: tuple[str, ...] = (), *, stdin: bool = True, **more) -> Passes:
    return Passes(code_options=_options(*code), value_options=_options(*values),
                  runs_stdin="no-operand" if stdin else "", **more)


# The settings whose value git runs as a command (a `!` alias runs in the shell; any alias is refused, since
# a value could start with `!`). Git's section and key names are case-insensitive.
_GIT_COMMAND_SETTINGS = lazy(
    r"(?i)(alias\.[^=]+|core\.(sshcommand|pager|editor|askpass|fsmonitor|hookspath|gitproxy)|diff\.external|"
    r"(diff|merge|difftool|mergetool|filter)\..+\.(command|textconv|driver|cmd|clean|smudge|process)|"
    r"credential(\..+)?\.helper|gpg(\..+)?\.program|sequence\.editor|pager\.[^=]+|uploadpack\.packobjectshook|"
    r"remote\..+\.(uploadpack|receivepack)|"
    # a config file included from a path: it may set any of the above
    r"include\.path|includeif\..+\.path)=")

_SHELL = Passes(code_options=_options("-c"), value_options=_options("-o", "+o", "-O", "+O", "--rcfile", "--init-file"),
                code_in_cluster=True, stdin_options=_options("-s"), runs_stdin="no-operand", language="shell")
_PERL = _interpreter(("-e", "-E"), ("-I", "-M", "-m"), repeats=True)
_NODE = _interpreter(("-e", "--eval", "-p", "--print"), ("-r", "--require"))
_VIM = Passes(code_options=_options("-c", "--cmd", "--remote-send", "--remote-expr"), code_prefix="+", repeats=True,
              value_options=_options("-u", "-U", "-i", "-T", "-S", "-w", "-W", "-q", "-t", "--servername",
                                     "--startuptime"),
              stdin_options=_options("-e", "-E", "-es", "-Es"), language="Ex (whose `!` runs the shell)")

PROGRAMS: dict[str, Passes] = {
    # Programs that run the rest of the line as a command.
    "env": _wrapper("-u", "--unset", "-C", "--chdir", assignments=True,
                    split_options=_options("-S", "--split-string")),
    "timeout": _wrapper("-s", "--signal", "-k", "--kill-after", operands=1),
    "nice": _wrapper("-n", "--adjustment"),
    "ionice": _wrapper("-c", "--class", "-n", "--classdata", "-p", "-P", "-u"),
    "chrt": _wrapper(operands=1),
    "taskset": _wrapper(operands=1),
    "nohup": _wrapper(),
    "setsid": _wrapper(),
    "stdbuf": _wrapper("-i", "-o", "-e", "--input", "--output", "--error"),
    "unbuffer": _wrapper(),
    "sudo": _wrapper("-u", "--user", "-g", "--group", "-C", "--close-from", "-D", "--chdir", "-h", "--host", "-p",
                     "--prompt", "-r", "--role", "-t", "--type", "-T", "--command-timeout", "-U", "--other-user"),
    "doas": _wrapper("-u", "-C"),
    "runuser": _wrapper("-u", "--user", "-g", "--group", "-G"),
    "chroot": _wrapper("--userspec", "--groups", operands=1),
    "time": _wrapper("-f", "--format", "-o", "--output"),
    "command": _wrapper(),
    "exec": _wrapper("-a"),
    "nsenter": _wrapper("-t", "--target"),
    "unshare": _wrapper(),
    "firejail": _wrapper(),
    "strace": _wrapper("-e", "-o", "-p", "-s", "-u"),
    "ltrace": _wrapper("-e", "-o", "-p", "-s", "-u"),
    "flock": _wrapper("-w", "--timeout", "-E", "--conflict-exit-code", operands=1),
    "busybox": _wrapper(),
    # ...and add its standard input to that command's words (or put it where the replace string stands).
    "xargs": _wrapper("-a", "--arg-file", "-d", "--delimiter", "-E", "-e", "-L", "-l", "-n", "--max-args", "-P",
                      "--max-procs", "-s", "--max-chars", input_as_arguments=True,
                      replace_options={"-I": "", "-i": "{}", "--replace": "{}"}),
    # Programs that run commands written among their own words.
    "find": Passes(command_options=_options("-exec", "-execdir", "-ok", "-okdir")),
    # Programs that take code in an option.
    "script": Passes(code_options=_options("-c", "--command"), runs_stdin="no-code", language="shell",
                     value_options=_options("-E", "--echo", "-I", "--log-in", "-O", "--log-out", "-B", "--log-io",
                                            "-T", "--log-timing", "-m", "--logging-format")),
    "git": Passes(code_options=_options("-c"), code_when=_GIT_COMMAND_SETTINGS, repeats=True, language="shell",
                  value_options=_options("-C", "--git-dir", "--work-tree", "--namespace", "--config-env"),
                  env_settings=_options("--config-env")),
    "make": Passes(code_options=_options("--eval", "-E"), repeats=True, script_options=_options("-f", "--file",
                                                                                                  "--makefile"),
                   value_options=_options("-C", "--directory", "-I", "--include-dir", "-o", "--old-file",
                                          "--assume-old", "-W", "--what-if", "--new-file", "--assume-new"),
                   language="makefile (its recipes run in the shell)", assignments_are_code=True),
    **{name: _VIM for name in ("vim", "vi", "nvim", "gvim", "view", "vimdiff", "evim", "rvim")},
    "ex": Passes(code_options=_VIM.code_options, code_prefix="+", repeats=True, value_options=_VIM.value_options,
                 runs_stdin="no-code", language=_VIM.language),
    # Interpreters.
    **{name: _SHELL for name in ("bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "fish", "tcsh", "csh")},
    "python": _interpreter(("-c",), ("-W", "-X", "-m")),
    "pypy": _interpreter(("-c",), ("-W", "-X", "-m")),
    "perl": _PERL,
    "ruby": _interpreter(("-e",), ("-I", "-r"), repeats=True),
    "node": _NODE,
    "nodejs": _NODE,
    "deno": _interpreter(("eval",), stdin=False),
    "bun": _interpreter(("-e", "--eval", "-p", "--print"), stdin=False),
    "php": _interpreter(("-r",), ("-d", "-c")),
    "lua": _interpreter(("-e",), ("-l",), repeats=True),
    "Rscript": _interpreter(("-e",), stdin=False, repeats=True),
    "tclsh": _interpreter(()),
    "expect": _interpreter(("-c",)),
    "osascript": _interpreter(("-e",), repeats=True),
    "pwsh": _interpreter(("-c", "-Command", "-command")),
    "awk": Passes(value_options=_options("-v", "-F"), script_options=_options("-f"), first_operand_is_code=True),
    "sed": Passes(code_options=_options("-e", "--expression"), script_options=_options("-f", "--file"),
                  first_operand_is_code=True, repeats=True),
    "su": _interpreter(("-c", "--command"), ("-s", "--shell", "-g", "-G"), stdin=False, language="shell"),
    "watch": Passes(value_options=_options("-n", "--interval", "-d"), first_operand_is_code=True, language="shell"),
    "ssh": Passes(value_options=_options("-p", "-i", "-l", "-o", "-F", "-J", "-L", "-R", "-D", "-E", "-b", "-c", "-m",
                                         "-O", "-Q", "-S", "-W", "-w", "-B"), remote_command=True, language="shell"),
}
_VERSIONED = lazy(r"^(python|pypy|perl|ruby|node|lua|php)[0-9.]*$")
_ASSIGNMENT = lazy(r"^[A-Za-z_][A-Za-z0-9_]*=")
_MAKE_ASSIGNMENT = lazy(r"^\s*(override\s+)?[A-Za-z_][\w.-]*\s*(:{1,3}|\+|\?|!)?=")


def is_shell(name: str) -> bool:
    return PROGRAMS.get(name) is _SHELL


def language(name: str) -> str:
    """What the code `name` runs is, in a message: `shell`, `python`, `makefile (...)`."""
    spec = PROGRAMS.get(name)
    return (spec.language if spec is not None else "") or name


def program_name(word: str) -> str:
    base = os.path.basename(word)
    match = _VERSIONED.match(base)
    if match:
        return match.group(1)
    return {"gawk": "awk", "mawk": "awk", "nawk": "awk", "gsed": "sed"}.get(base, base)


def code_places(words: list[Any], is_value) -> Iterator[tuple[str, Any]]:
    """(program, code) for each place `words` runs code given on the command line; code is STDIN when the
    program reads it from standard input, FROM_INPUT when xargs makes standard input part of it.

    `is_value(word)` tells a word filled from `${...}`: such a word in a program's place is no name to follow.
    """
    yield from _walk(list(words), is_value, None)


def settings_from_environment(words: list[Any]) -> list[str]:
    """The environment variables whose value a program takes as a setting that runs a command
    (`git --config-env=alias.x=NAME`): a value from state there is code as much as in `-c`."""
    if not words or not isinstance(words[0], str):
        return []
    spec = PROGRAMS.get(program_name(words[0]))
    if spec is None or not spec.env_settings:
        return []
    found = []
    for index, word in enumerate(words[1:], start=1):
        if not isinstance(word, str):
            continue
        option, _, attached = word.partition("=")
        if option not in spec.env_settings:
            continue
        setting = attached if attached else (words[index + 1] if index + 1 < len(words) else "")
        if isinstance(setting, str) and spec.code_when is not None and spec.code_when.match(setting):
            found.append(setting.rsplit("=", 1)[-1])
    return found


def code_word(words: list[Any], is_value) -> tuple[str, Any] | None:
    """The first of `code_places`, or None."""
    return next(code_places(words, is_value), None)


@dataclass(frozen=True)
class _Feed:
    """What xargs does with its standard input for the command it runs."""

    replace: str | None  # the string input replaces in the command's words (`-I {}`); None: appended


def _walk(words: list[Any], is_value, feed: _Feed | None) -> Iterator[tuple[str, Any]]:
    if not words:
        return
    first = words[0]
    if not isinstance(first, str) or is_value(first):
        return
    name = program_name(first)
    spec = PROGRAMS.get(name)
    if spec is None:
        return
    rest = words[1:]
    if spec.remote_command:
        remote = _operands(rest, spec)
        if len(remote) > 1:
            yield name, next((w for w in remote[1:] if is_value(w)), remote[1])
        return
    if spec.command_options:
        yield from _commands_among(rest, spec, is_value)
        return
    replace = None
    saw_code = False
    i = 0
    while i < len(rest):
        word = rest[i]
        if is_value(word):
            prefix = _literal_prefix(word)
            if prefix and (_code_option(prefix, spec) is not None or
                           (spec.code_prefix and prefix.startswith(spec.code_prefix))):
                yield name, word  # `-c${code}`, `+${command}`: the option with its code attached
                saw_code = True
                if not spec.repeats:
                    return
                i += 1
                continue
            break
        if not isinstance(word, str):
            break
        if word in spec.code_options and not word.startswith(("-", "+")):  # a subcommand: `deno eval CODE`
            if i + 1 < len(rest):
                yield name, rest[i + 1]
            return
        if word == "--":
            i += 1
            break
        if word == "-" or not word.startswith(("-", "+")):
            if spec.assignments and _ASSIGNMENT.match(word):
                i += 1
                continue
            break
        if word in spec.split_options or word.startswith("--split-string="):
            return  # the caller reads `env -S` as a command line: see `env_split_string`
        if word in spec.value_options:
            i += 2
            continue
        if word in spec.script_options:
            if i + 1 < len(rest) and rest[i + 1] == "-":
                yield name, STDIN
            saw_code = True  # the program is that file: the operands are data
            i += 2
            continue
        if spec.replace_options is not None:
            found, replace_given, used = _replace_string(word, rest[i + 1] if i + 1 < len(rest) else None,
                                                         spec.replace_options)
            if found:
                replace = replace_given
                i += used
                continue
        code = _code_option(word, spec)
        if code is not None:
            attached = word[len(code):]
            if attached:
                value, i = attached, i + 1
            elif i + 1 < len(rest):
                value, i = rest[i + 1], i + 2
            else:
                if feed is not None:
                    yield name, FROM_INPUT  # xargs adds its input where the code goes
                return
            saw_code = True
            if spec.code_when is None or _is_code_setting(value, spec.code_when, is_value):
                yield name, FROM_INPUT if feed is not None and _holds(value, feed.replace) else value
            if not spec.repeats:
                return
            continue
        if word in spec.stdin_options:
            yield name, STDIN
            if not spec.repeats:
                return
        i += 1
    operands = rest[i:]
    if spec.assignments_are_code:
        for word in operands:
            if is_value(word) and _MAKE_ASSIGNMENT.match(_literal_prefix(word) or ""):
                yield name, word  # make evaluates `X=${value}`: `$(shell …)` in it runs
    if spec.runs_command:
        if len(operands) <= spec.operands:
            if feed is not None:
                yield name, FROM_INPUT  # the command itself comes from xargs's input
            return
        inner = _Feed(replace) if spec.input_as_arguments else feed
        yield from _walk(operands[spec.operands:], is_value, inner)
        return
    if spec.runs_stdin == "no-code" and not saw_code:
        yield name, STDIN
        return
    if saw_code:
        return
    if not operands or operands[0] == "-":
        if feed is not None and (spec.runs_stdin or spec.first_operand_is_code) and not operands:
            yield name, FROM_INPUT  # its program (or script) is the first word xargs adds
        elif spec.runs_stdin or operands:
            yield name, STDIN
        return
    if spec.first_operand_is_code:
        code = operands[0]
        yield name, FROM_INPUT if feed is not None and _holds(code, feed.replace) else code


def _commands_among(words: list[Any], spec: Passes, is_value) -> Iterator[tuple[str, Any]]:
    """The commands of `find -exec CMD... ;` (or `+`), wherever they stand among its other words."""
    i = 0
    while i < len(words):
        if isinstance(words[i], str) and not is_value(words[i]) and words[i] in spec.command_options:
            end = next((j for j in range(i + 1, len(words)) if words[j] in (";", "+")), len(words))
            yield from _walk(words[i + 1:end], is_value, None)
            i = end
        i += 1


def _replace_string(word: str, following: str | None, options: Mapping[str, str]) -> tuple[bool, str | None, int]:
    """(is a replace option, the replace string, words used) for xargs's `-I R`, `-IR`, `-i`, `--replace=R`."""
    for option, default in options.items():
        if word == option:
            if default:
                return True, default, 1
            return True, following if isinstance(following, str) else None, 2
        if option.startswith("--") and word.startswith(option + "="):
            return True, word[len(option) + 1:], 1
        if not option.startswith("--") and word.startswith(option):
            return True, word[len(option):], 1
    return False, None, 0


def _holds(code: Any, replace: str | None) -> bool:
    """True when xargs puts its input inside `code` (the replace string is in it)."""
    if not replace:
        return False
    parts = getattr(code, "parts", None)
    texts = [p for p in parts if isinstance(p, str)] if parts is not None else [code] if isinstance(code, str) else []
    return any(replace in text for text in texts)


def _is_code_setting(value: Any, pattern: re.Pattern, is_value) -> bool:
    """For `git -c KEY=VALUE`: the value is code when KEY is a setting git runs, or is itself filled in."""
    text = _literal_prefix(value) if is_value(value) else value
    if not isinstance(text, str) or "=" not in text:
        return is_value(value)
    return pattern.match(text) is not None


def _literal_prefix(word: Any) -> str | None:
    """The text written before the first `${...}` of a filled word (a Template, or text holding a placeholder)."""
    parts = getattr(word, "parts", None)
    if parts is not None:
        return parts[0] if parts and isinstance(parts[0], str) else None
    return word.split("\x00", 1)[0] if isinstance(word, str) else None


def _code_option(word: str, spec: Passes) -> str | None:
    """The option part of `word` when it asks for inline code (`-c`, `-euxc`, `-ne`, `-cCODE`, `--eval=`, `+`)."""
    if word in spec.code_options:
        return word
    if spec.code_prefix and word.startswith(spec.code_prefix):
        rest = word[len(spec.code_prefix):]
        return spec.code_prefix if rest and not rest.isdigit() else None
    if not word.startswith("-"):
        return None
    if word.startswith("--"):
        option = word.split("=", 1)[0]
        return option + "=" if option in spec.code_options and "=" in word else None
    letters = {o[1] for o in spec.code_options if len(o) == 2 and o.startswith("-")}
    if not letters:
        return None
    if spec.code_in_cluster:  # -c anywhere in a cluster of flags: -ec, -euxc; the code is the next word
        return word if any(letter in word[1:] for letter in letters) and word[1:].isalpha() else None
    for i, letter in enumerate(word[1:], start=1):  # perl -lne, python -Bc: flags, then the code letter
        if letter in letters:
            return word[:i + 1]
        if not letter.isalpha():
            return None
    return None


def _operands(words: list[Any], spec: Passes) -> list[Any]:
    out: list[Any] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif isinstance(word, str) and word.startswith("-") and not out:
            skip = word in spec.value_options
        else:
            out.append(word)
    return out


def env_split_string(words: list[Any], is_value) -> Any | None:
    """The string of `env -S STRING`, which env splits and runs like a command line."""
    for i, word in enumerate(words[:-1]):
        if isinstance(word, str) and not is_value(word):
            spec = PROGRAMS.get(program_name(word))
            if spec is None or not spec.split_options:
                continue
            for option, following in zip(words[i + 1:], words[i + 2:]):
                if option in spec.split_options:
                    return following
    return None
