"""Finding the code in a command line: the text an interpreter will run, behind any wrappers.

A `${...}` value is safe as an argument but not as code. `bash -c CODE`,
`python3 -c CODE`, `perl -e CODE`, `awk PROGRAM` run a word as code; `bash -s`,
or an interpreter with no script, runs its standard input. Programs that only
start another program (`env`, `timeout`, `nice`, `xargs`, `sudo`...) are
looked through: `env X=1 timeout 5 bash -c CODE` runs CODE all the same.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

STDIN = "standard input"

# Wrappers: options that take a value (so the value is not the program), and how many operands come
# before the program (timeout's DURATION, chroot's DIR, taskset's MASK).
_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "env": (frozenset({"-u", "--unset", "-C", "--chdir"}), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (frozenset({"-c", "--class", "-n", "--classdata", "-p", "-P", "-u"}), 0),
    "chrt": (frozenset(), 1),
    "taskset": (frozenset(), 1),
    "nohup": (frozenset(), 0),
    "setsid": (frozenset(), 0),
    "stdbuf": (frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}), 0),
    "unbuffer": (frozenset(), 0),
    "sudo": (frozenset({"-u", "--user", "-g", "--group", "-C", "--close-from", "-D", "--chdir", "-h", "--host",
                        "-p", "--prompt", "-r", "--role", "-t", "--type", "-T", "--command-timeout", "-U",
                        "--other-user"}), 0),
    "doas": (frozenset({"-u", "-C"}), 0),
    "runuser": (frozenset({"-u", "--user", "-g", "--group", "-G"}), 0),
    "chroot": (frozenset({"--userspec", "--groups"}), 1),
    "xargs": (frozenset({"-a", "--arg-file", "-d", "--delimiter", "-E", "-e", "-I", "-i", "-L", "-l", "-n",
                         "--max-args", "-P", "--max-procs", "-s", "--max-chars"}), 0),
    "time": (frozenset({"-f", "--format", "-o", "--output"}), 0),
    "command": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "nsenter": (frozenset({"-t", "--target"}), 0),
    "unshare": (frozenset(), 0),
    "firejail": (frozenset(), 0),
    "strace": (frozenset({"-e", "-o", "-p", "-s", "-u"}), 0),
    "ltrace": (frozenset({"-e", "-o", "-p", "-s", "-u"}), 0),
    "flock": (frozenset({"-w", "--timeout", "-E", "--conflict-exit-code"}), 1),
    "busybox": (frozenset(), 0),
}


@dataclass(frozen=True)
class Interpreter:
    code_options: frozenset[str]     # the next word (or the rest of the option word) is code
    value_options: frozenset[str]    # take a value that is not code
    first_operand_is_code: bool      # awk, sed: the program is the first operand
    reads_stdin_without_operand: bool


_SHELL = Interpreter(frozenset({"-c"}), frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"}), False, True)
_INTERPRETERS: dict[str, Interpreter] = {
    **{name: _SHELL for name in ("bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "fish", "tcsh", "csh")},
    "python": Interpreter(frozenset({"-c"}), frozenset({"-W", "-X", "-m"}), False, True),
    "pypy": Interpreter(frozenset({"-c"}), frozenset({"-W", "-X", "-m"}), False, True),
    "perl": Interpreter(frozenset({"-e", "-E"}), frozenset({"-I", "-M", "-m"}), False, True),
    "ruby": Interpreter(frozenset({"-e"}), frozenset({"-I", "-r"}), False, True),
    "node": Interpreter(frozenset({"-e", "--eval", "-p", "--print"}), frozenset({"-r", "--require"}), False, True),
    "nodejs": Interpreter(frozenset({"-e", "--eval", "-p", "--print"}), frozenset({"-r", "--require"}), False, True),
    "deno": Interpreter(frozenset({"eval"}), frozenset(), False, False),
    "bun": Interpreter(frozenset({"-e", "--eval", "-p", "--print"}), frozenset(), False, False),
    "php": Interpreter(frozenset({"-r"}), frozenset({"-d", "-c"}), False, True),
    "lua": Interpreter(frozenset({"-e"}), frozenset({"-l"}), False, True),
    "Rscript": Interpreter(frozenset({"-e"}), frozenset(), False, False),
    "tclsh": Interpreter(frozenset(), frozenset(), False, True),
    "expect": Interpreter(frozenset({"-c"}), frozenset(), False, True),
    "osascript": Interpreter(frozenset({"-e"}), frozenset(), False, True),
    "pwsh": Interpreter(frozenset({"-c", "-Command", "-command"}), frozenset(), False, True),
    "awk": Interpreter(frozenset(), frozenset({"-v", "-F", "-f"}), True, False),
    "sed": Interpreter(frozenset({"-e", "--expression"}), frozenset({"-f", "--file"}), True, False),
    "su": Interpreter(frozenset({"-c", "--command"}), frozenset({"-s", "--shell", "-g", "-G"}), False, False),
    "watch": Interpreter(frozenset(), frozenset({"-n", "--interval", "-d"}), True, False),
    "ssh": Interpreter(frozenset(), frozenset({"-p", "-i", "-l", "-o", "-F", "-J", "-L", "-R", "-D", "-E", "-b",
                                               "-c", "-m", "-O", "-Q", "-S", "-W", "-w", "-B"}), False, False),
}
_VERSIONED = re.compile(r"^(python|pypy|perl|ruby|node|lua|php)[0-9.]*$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def is_shell(name: str) -> bool:
    return _INTERPRETERS.get(name) is _SHELL


def program_name(word: str) -> str:
    base = os.path.basename(word)
    match = _VERSIONED.match(base)
    if match:
        return match.group(1)
    return {"gawk": "awk", "mawk": "awk", "nawk": "awk", "gsed": "sed"}.get(base, base)


def code_word(words: list[Any], is_value) -> tuple[str, Any] | None:
    """(program, code) when `words` runs code given on the command line; code is STDIN when it comes from stdin.

    `is_value(word)` tells a word filled from `${...}`: such a word in a program's place is no name to follow.
    """
    start = _past_wrappers(words, is_value)
    if start is None:
        return None
    name = program_name(words[start])
    spec = _INTERPRETERS.get(name)
    if spec is None:
        return None
    if name == "ssh":  # everything after the host is one remote shell command
        rest = _operands(words[start + 1:], spec)
        return (name, next((w for w in rest[1:] if is_value(w)), rest[1])) if len(rest) > 1 else None
    rest = words[start + 1:]
    i = 0
    while i < len(rest):
        word = rest[i]
        prefix = _literal_prefix(word) if is_value(word) else None
        if prefix and prefix.startswith("-") and _inline_code_option(prefix, spec, name):
            return name, word  # `-c${code}`: the option with its code attached
        if not isinstance(word, str) or is_value(word) or word == "-" or not word.startswith(("-", "+")) \
                or word == "--":
            break
        if word in spec.value_options:
            i += 2
            continue
        code = _inline_code_option(word, spec, name)
        if code is not None:
            attached = word[len(code):]
            if attached:
                return name, attached
            return (name, rest[i + 1]) if i + 1 < len(rest) else None
        if spec is _SHELL and word == "-s":
            return name, STDIN
        i += 1
    if i < len(rest) and rest[i] == "--":
        i += 1
    if name == "deno":
        return None
    if i >= len(rest) or rest[i] == "-":
        return (name, STDIN) if spec.reads_stdin_without_operand or i < len(rest) else None
    if spec.first_operand_is_code:
        return name, rest[i]
    return None


def _literal_prefix(word: Any) -> str | None:
    """The text written before the first `${...}` of a filled word (a Template, or text holding a placeholder)."""
    parts = getattr(word, "parts", None)
    if parts is not None:
        return parts[0] if parts and isinstance(parts[0], str) else None
    return word.split("\x00", 1)[0] if isinstance(word, str) else None


def _inline_code_option(word: str, spec: Interpreter, name: str) -> str | None:
    """The option part of `word` when it asks for inline code (`-c`, `-euxc`, `-ne`, `-cCODE`, `--eval=`)."""
    if word in spec.code_options:
        return word
    if word.startswith("--"):
        option = word.split("=", 1)[0]
        return option + "=" if option in spec.code_options and "=" in word else None
    letters = {o[1] for o in spec.code_options if len(o) == 2}
    if spec is _SHELL:  # -c anywhere in a cluster of flags: -ec, -euxc; the code is the next word
        return word if "c" in word[1:] and word[1:].isalpha() else None
    for i, letter in enumerate(word[1:], start=1):  # perl -lne, python -Bc: flags, then the code letter
        if letter in letters:
            return word[:i + 1]
        if not letter.isalpha():
            return None
    return None


def _operands(words: list[Any], spec: Interpreter) -> list[Any]:
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


def _past_wrappers(words: list[Any], is_value) -> int | None:
    """The index of the program that really runs, after wrappers and their options."""
    i = 0
    while i < len(words):
        word = words[i]
        if not isinstance(word, str) or is_value(word):
            return None
        name = program_name(word)
        if name not in _WRAPPERS:
            return i
        value_options, operands = _WRAPPERS[name]
        i += 1
        if name == "busybox":
            continue
        while i < len(words) and isinstance(words[i], str) and not is_value(words[i]):
            option = words[i]
            if option == "--":
                i += 1
                break
            if name == "env" and (option in ("-S", "--split-string") or option.startswith("--split-string=")):
                return None  # handled by the caller as code: see `split_string`
            if option.startswith("-") and len(option) > 1:
                i += 2 if option in value_options else 1
                continue
            if name == "env" and _ASSIGNMENT.match(option):
                i += 1
                continue
            break
        i += operands
    return None


def env_split_string(words: list[Any], is_value) -> Any | None:
    """The string of `env -S STRING`, which env splits and runs like a command line."""
    for i, word in enumerate(words[:-1]):
        if isinstance(word, str) and not is_value(word) and program_name(word) == "env":
            for option, following in zip(words[i + 1:], words[i + 2:]):
                if option in ("-S", "--split-string"):
                    return following
    return None
