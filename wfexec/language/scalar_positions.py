"""Where a character of a YAML string value sits in the file.

The loader records where each scalar starts. To point at a character inside
one (a syntax error in an expression), the value is walked beside the file
text from that start: indentation, line folds, quote doubling and escapes are
in the file but not in the value. Exact for plain and quoted scalars on one
line and for literal blocks (`|`); for folded text (`>`, or a quoted or plain
scalar over several lines) the walk follows the folds and is right unless an
escape changed the text a lot.
"""

from __future__ import annotations


def offset_in(text: str, line: int, column: int) -> int:
    """The index in `text` of a 1-based line and column."""
    start = 0
    for _ in range(line - 1):
        found = text.find("\n", start)
        if found < 0:
            break
        start = found + 1
    return min(start + column - 1, len(text))


def position_in_file(file_text: str, start: tuple[int, int], value: str, offset: int) -> tuple[int, int] | None:
    """The file's (line, column) of `value[offset]`, for a scalar whose node starts at `start`."""
    raw_start = offset_in(file_text, *start)
    if raw_start >= len(file_text):
        return None
    indicator = file_text[raw_start]
    j = raw_start
    double = indicator == '"'
    if indicator in "|>":
        j = file_text.find("\n", raw_start)
        if j < 0:
            return None
        j += 1
    elif indicator in "'\"":
        j += 1
    i = 0
    n = len(file_text)
    while i < offset and j < n:
        raw = file_text[j]
        if raw == value[i]:
            i += 1
            j += 1
        elif double and raw == "\\":
            j += 2
            if j <= n and file_text[j - 1] not in "\n":
                i += 1
        elif raw == "'" and indicator == "'":
            j += 1  # the first of a doubled quote
        elif raw in " \t\r\n":
            j += 1
        else:
            return None  # lost track: better no position than a wrong one
    while j < n and file_text[j] in " \t\r\n" and i < len(value) and value[i] not in " \t\r\n":
        j += 1
    line = file_text.count("\n", 0, j) + 1
    column = j - (file_text.rfind("\n", 0, j) + 1) + 1
    return line, column
