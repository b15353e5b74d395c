"""Other languages inside `${…}`: the shell's own expansions, and jq or shell idioms written where JavaScript is.

Hiivmind files are read by a model, which takes `${name##*-}` in a script as the shell's and
`${items | join(', ')}` as a filter. wfexec runs them, so it decides:

- **The shell's own.** A `${…}` whose inside is a shell parameter expansion and not JavaScript — a shell
  variable name (letters, digits, `_`; no dots) followed by one of the shell's operators (`:-` `:=` `:+` `:?`
  `#` `##` `%` `%%` `^` `^^` `,` `,,` `:N`), or `${#name}` — is left as written, for the shell that runs the
  script. Everything else is a template.
- **Idioms with a JavaScript equivalent** (a jq pipe `x | join(', ')`, `| map(.name)`, `| tojson`, `| length`;
  a shell operator on a state path `${flags.dry_run:-false}`; `starts_with`/`ends_with`) are errors whose hint is
  the JavaScript to write instead.
"""

from __future__ import annotations

import re

from wfexec.system.patterns import lazy

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_SHELL_OPERATOR = r"(?::[-=+?]|##?|%%?|\^\^?|,,?|:\s*-?[0-9])"
_SHELL_EXPANSION = lazy(rf"^(?:{_NAME}{_SHELL_OPERATOR}.*|#{_NAME})$", re.S)
# The names of the shell expansions in a text (`${name:-x}`, `${#name}`), for the check of names read both ways.
SHELL_EXPANSIONS = lazy(rf"(?<!\$)\$\{{(?:#({_NAME})\}}|({_NAME}){_SHELL_OPERATOR})")
# A state path (dots or indexes) followed by a shell operator: a template meant with the shell's default or trim.
_PATH_WITH_SHELL_OPERATOR = lazy(rf"^({_NAME}(?:\.{_NAME}|\[[^\]]*\])+)({_SHELL_OPERATOR})(.*)$", re.S)
_FILTER = lazy(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(\(.*\))?$", re.S)
_JQ_FILTERS = {"join", "map", "tojson", "length", "keys", "select", "first", "last", "sort", "unique", "reverse",
               "ascii_downcase", "ascii_upcase", "split", "tostring", "add", "values", "to_entries", "fromjson",
               "tonumber"}
_SNAKE_HELPERS = {"starts_with": "startsWith", "ends_with": "endsWith"}


_DEFAULT_FORM = lazy(rf"^{_NAME}:[-=+?]")


def is_shell_expansion(inside: str, javascript_failed: bool = True) -> bool:
    """Whether a `${…}` is the shell's own expansion (left as written). `${x%2}` or `${a^b}` read as JavaScript
    first, so this is asked once JavaScript has failed; `${x:-y}` and `${x:+y}` are asked first, since JavaScript
    reads them as a label before a statement, which no template means."""
    text = inside.strip()
    if not javascript_failed:
        return bool(_DEFAULT_FORM.match(text))
    return bool(_SHELL_EXPANSION.match(text))


def assigned_in_script(text: str) -> set[str]:
    """The shell variables a script sets: `name=`, `for name in`, `read [-r] name…`, `local`/`export name`."""
    found = set(re.findall(rf"(?:^|[\s;&|(]){_NAME}(?==)", text))
    found = {word.strip(" \t\r\n\f\v;&|(") for word in found}  # a name at the start of a line too
    found.update(re.findall(rf"\bfor\s+({_NAME})\s+in\b", text))
    for names in re.findall(r"\bread[ \t]+(?:-\w+[ \t]+)*([A-Za-z_][\w \t]*)", text):
        found.update(names.split())
    found.update(re.findall(rf"\b(?:local|export|declare|typeset)\s+(?:-\w+\s+)*({_NAME})", text))
    return found


def jq_filters(text: str) -> list[str]:
    """The filter names of a jq-style pipe (`x | tojson | length`), or [] when the text is no such pipe."""
    segments = _top_level_pipes(text.strip())
    filters = [_FILTER.match(segment) for segment in segments[1:]]
    if len(segments) > 1 and all(f is not None and f.group(1) in _JQ_FILTERS for f in filters):
        return [f.group(1) for f in filters if f is not None]
    return []


def javascript_for(inside: str) -> tuple[str, str] | None:
    """(what the inside is, the JavaScript that does the same), for an idiom from jq or the shell; else None."""
    text = inside.strip()
    shell = _PATH_WITH_SHELL_OPERATOR.match(text)
    if shell:
        path, operator, rest = shell.groups()
        return f"`{operator}` on `{path}` is shell syntax", f"`${{{_shell_in_javascript(path, operator, rest)}}}`"
    segments = _top_level_pipes(text)
    filters = [_FILTER.match(segment) for segment in segments[1:]]
    if len(segments) > 1 and all(f is not None and f.group(1) in _JQ_FILTERS for f in filters):
        value = segments[0]
        for found in filters:
            assert found is not None  # checked just above
            value = _filter_in_javascript(value, found.group(1), (found.group(2) or "()")[1:-1])
        return "a jq-style filter (`| …`) is not JavaScript", f"`${{{value}}}`"
    for snake, camel in _SNAKE_HELPERS.items():
        call = re.search(rf"\b{snake}\(\s*([^,()]+?)\s*,\s*([^()]+?)\s*\)", text)
        if call:
            return (f"`{snake}` is not a function here",
                    f"`{call.group(1)}.{camel}({call.group(2)})` (or the helper `{snake.replace('_', '')}`)")
    return None


def _top_level_pipes(text: str) -> list[str]:
    """`a | b(x | y) | c` → ['a', 'b(x | y)', 'c']: the `|` outside quotes and brackets (`||` is JavaScript's)."""
    segments, depth, quote, start, i = [], 0, "", 0, 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"`":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "|" and depth == 0:
            if text[i + 1: i + 2] == "|" or text[i - 1: i] == "|":
                i += 2 if text[i + 1: i + 2] == "|" else 1
                continue
            segments.append(text[start:i].strip())
            start = i + 1
        i += 1
    segments.append(text[start:].strip())
    return segments


def _shell_in_javascript(path: str, operator: str, rest: str) -> str:
    if operator in (":-", ":="):
        default = rest.strip() or "''"
        if not re.match(r"^(['\"]).*\1$|^-?[0-9.]+$|^(true|false|null)$", default):
            default = repr(default)
        return f"{path} || {default}"
    if operator in ("%", "%%") and rest == ".*":
        return f"{path}.replace(/\\.[^.]*$/, '')"
    if operator in ("#", "##") and rest.startswith("*"):
        return f"{path}.split({rest[1:]!r}).pop()"
    return f"{path} (then a JavaScript string method: .replace(), .slice(), …)"


# jq filter → its JavaScript, `{value}` the value piped in and `{argument}` the filter's argument.
_FILTERS_IN_JAVASCRIPT = {
    "join": "{value}.join({argument})", "tojson": "JSON.stringify({value})", "tostring": "JSON.stringify({value})",
    "length": "{value}.length", "keys": "Object.keys({value})", "values": "Object.values({value})",
    "first": "{value}[0]", "last": "{value}.at(-1)", "ascii_downcase": "{value}.toLowerCase()",
    "ascii_upcase": "{value}.toUpperCase()", "split": "{value}.split({argument})", "sort": "[...{value}].sort()",
    "reverse": "[...{value}].reverse()", "fromjson": "JSON.parse({value})", "tonumber": "Number({value})",
}


def _filter_in_javascript(value: str, name: str, argument: str) -> str:
    if name == "map":  # `.name` inside map's argument is each item's field
        body = re.sub(r"(?<![\w\]\)])\.(?=[A-Za-z_])", "i.", argument)
        return f"{value}.map(i => {body})"
    written = _FILTERS_IN_JAVASCRIPT.get(name)
    if written is None:
        return f"{value} (then the JavaScript array method for `{name}`)"
    return written.format(value=value, argument=argument)


def shell_expanded_names(text: str) -> list[str]:
    """The variables a text's shell expansions read (`${name:-x}`, `${#name}`), in order, once each."""
    return list(dict.fromkeys(a or b for a, b in SHELL_EXPANSIONS.findall(text)))
