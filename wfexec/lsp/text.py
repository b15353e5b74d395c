"""Where the cursor is in a YAML file, read from the text's lines.

An editor asks about a file while it is being typed, when it often does not parse: so the key path and the word
under the cursor come from indentation and the line itself, never from a parse. Lines and columns here are
0-based, as the Language Server Protocol counts them (characters of the line, which are UTF-16 units for the
ASCII that keys and ids are written in).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# `  - key: value`: the list dashes, the key (plain or quoted), then the value after `: `.
_ENTRY = re.compile(r"""^(?P<indent>[ ]*)(?P<dashes>(?:-[ ]+)*)(?P<key>"[^"]*"|'[^']*'|[^\s"'#:{}\[\],][^:#]*?)[ ]*:(?:[ ]+|$)""")
_LIST_ITEM = re.compile(r"^(?P<indent>[ ]*)-(?:[ ]+|$)")
_WORD = re.compile(r"[\w.\-/]+")
_TEMPLATE = re.compile(r"\$\{([^}]*)\}?")


@dataclass(frozen=True)
class Entry:
    """One `key: value` line (or the `key:` after list dashes)."""

    key: str
    key_start: int      # column of the key's first character (a quoted key: its quote)
    key_end: int
    value: str          # as written, without a trailing comment
    value_start: int
    depth: int          # the key's column: deeper keys belong to it


def entry(line: str) -> Entry | None:
    match = _ENTRY.match(line)
    if match is None:
        return None
    raw_key = match.group("key")
    key_start = match.start("key")
    value_start = match.end()
    value = _without_comment(line[value_start:]).rstrip()
    return Entry(_unquote(raw_key), key_start, key_start + len(raw_key), value, value_start, key_start)


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def _without_comment(text: str) -> str:
    quote = ""
    for index, char in enumerate(text):
        if quote:
            if char == quote:
                quote = ""
        elif char in "\"'" and (index == 0 or text[index - 1] in " [{,:"):
            quote = char
        elif char == "#" and (index == 0 or text[index - 1] == " "):
            return text[:index]
    return text


def key_path(lines: list[str], line_no: int) -> tuple[str, ...]:
    """The keys from the top of the document down to the key on `line_no` (a blank or partial line: down to
    the mapping the cursor's indentation puts it in). A list item counts as "-"."""
    own = entry(lines[line_no]) if line_no < len(lines) else None
    text = lines[line_no] if line_no < len(lines) else ""
    depth = own.depth if own else len(text) - len(text.lstrip(" "))
    path: list[str] = [own.key] if own else []
    if own and own.key_start > len(text) - len(text.lstrip(" ")):
        path.insert(0, "-")
    for index in range(min(line_no, len(lines)) - 1, -1, -1):
        line = lines[index]
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(line) - len(line.lstrip(" "))
        found = entry(line)
        if found is not None and found.depth < depth:
            path.insert(0, found.key)
            if found.key_start > indent:  # `- key:`: the key is inside a list item
                path.insert(0, "-")
            depth = indent
        elif found is not None and found.depth == depth and found.key_start > indent and path[:1] != ["-"]:
            path.insert(0, "-")  # a sibling key that starts the list item the cursor's key is in
            depth = indent
        elif found is None and _LIST_ITEM.match(line) and indent < depth:
            path.insert(0, "-")
            depth = indent
        if depth == 0:
            break
    return tuple(path)


def word_range(line: str, character: int) -> tuple[int, int]:
    """The id, path or type name around `character` (an empty range at it when there is none)."""
    for match in _WORD.finditer(line):
        if match.start() <= character <= match.end():
            return match.start(), match.end()
    return character, character


def scalar_range(line: str, start: int) -> tuple[int, int]:
    """The key or scalar that starts at `start`: a quoted one to its closing quote, a plain one to `: `, ` #`,
    or the end of a flow item."""
    if start >= len(line):
        return start, start
    if line[start] in "\"'":
        close = line.find(line[start], start + 1)
        return start, (close + 1 if close > 0 else len(line))
    end = start
    while end < len(line):
        char = line[end]
        if char in ",}]" or (char == ":" and (end + 1 == len(line) or line[end + 1] == " ")):
            break
        if char == "#" and end > start and line[end - 1] == " ":
            break
        end += 1
    return start, len(line[:end].rstrip()) if end > start else start


def template_name_at(line: str, character: int) -> str | None:
    """The name a `${…}` under the cursor reads (its first path: `computed.x` of `${computed.x || 0}`)."""
    for match in _TEMPLATE.finditer(line):
        if match.start() <= character <= match.end():
            start, end = word_range(line, max(character, match.start(1)))
            word = line[start:end] if match.start(1) <= start <= match.start(1) + len(match.group(1)) else ""
            return word.strip(".") or None
    return None


def inside_template(line: str, character: int) -> bool:
    """Whether the cursor is after a `${` not yet closed on this line."""
    before = line[:character]
    opened = before.rfind("${")
    return opened >= 0 and "}" not in before[opened:]


def block_end(lines: list[str], line_no: int) -> int:
    """The last line of the block whose key is on `line_no` (its deeper-indented lines, blanks inside it)."""
    own = entry(lines[line_no])
    depth = own.depth if own else len(lines[line_no]) - len(lines[line_no].lstrip(" "))
    last = line_no
    for index in range(line_no + 1, len(lines)):
        line = lines[index]
        if not line.strip():
            continue
        if len(line) - len(line.lstrip(" ")) <= depth:
            break
        last = index
    return last


_FLOW_TYPE = re.compile(r"[{,]\s*type\s*:\s*([\w\-]+)")


def sibling_value(lines: list[str], line_no: int, key: str, depth: int | None = None) -> str | None:
    """The value of `key` in the mapping that holds the key on `line_no` (or, on a blank line, the mapping its
    indentation `depth` puts the cursor in): `type` names the call or node a parameter belongs to."""
    line = lines[line_no] if line_no < len(lines) else ""
    if key == "type":
        flow = _FLOW_TYPE.search(line)
        if flow is not None and line.rfind("{") >= 0:
            return flow.group(1)
    own = entry(line)
    if depth is None:
        depth = own.depth if own else len(line) - len(line.lstrip(" "))
    for step in (-1, 1):
        index = line_no
        while 0 <= index < len(lines):
            text = lines[index]
            if text.strip() and not text.lstrip().startswith("#"):
                found = entry(text)
                indent = len(text) - len(text.lstrip(" "))
                starts_item = found is not None and found.key_start > indent  # `- key:`
                if found is not None and found.depth == depth and (not starts_item or step == -1
                                                                   or index == line_no):
                    if found.key == key:
                        return found.value.strip("\"'") or None
                    if starts_item:
                        break  # this list item's mapping starts here: nothing above belongs to it
                elif indent < depth:
                    break
            index += step
    return None


_FLOW_KEY = re.compile(r"[{,][ ]*([\w\-]+)[ ]*:[ ]")


def flow_key(line: str, character: int) -> str | None:
    """The key whose value the cursor is in, inside a flow mapping (`{type: flag_set, flag: x}`), or None."""
    opened = line.rfind("{", 0, character)
    if opened < 0 or "}" in line[opened:character]:
        return None
    keys = [m for m in _FLOW_KEY.finditer(line, opened) if m.end() <= character]
    return keys[-1].group(1) if keys else None
