"""Frontmatter policy of an `.md` state (reference §1.5, §1.6).

```
---
allowed_transitions:
  - {tag: goto, target: REVIEW}
  - {tag: result, payload: DONE}
model: sonnet
effort: high
force_implicit: false
---
prompt body…
```

The frontmatter starts at byte 0 and ends with a `---` line followed by a
newline; spaces or tabs may end either `---` line. No frontmatter, an empty
one, or `null`/`{}` means no policy: every tag is allowed and a missing tag
is fatal. With `allowed_transitions`, a wrong, missing or extra tag earns a
reminder re-prompt instead, and a policy of exactly one entry with a target
(or one `result` with a fixed payload) is *implicit*: the model may emit no
tag at all.

The fields are read as Raymond's YAML decoder reads them into its types
(policy.go: `[]map[string]string`, `string`, `bool`): an entry is a mapping
(one without `tag` is dropped, a null one too), so an entry written as text
(`- goto`), a number or a list is an error, as is a value in an entry that is
a list or a mapping; a number or a boolean where text goes is its text
(`model: 5` is the model "5", which lint calls invalid); `force_implicit`
takes YAML 1.1's yes/no/on/off/y/n words too. Each error names the line of
the state file.
"""

from __future__ import annotations

import functools
import os
import re
from wfexec.records import dataclass

from wfexec.errors import WfexecError
from wfexec.protocol.tags import Transition
from wfexec.system.patterns import lazy

FIELDS = ("allowed_transitions", "model", "effort", "force_implicit")
# Keys compared against an emitted tag; other keys only feed implicit dispatch and the reminder.
MATCH_KEYS = ("target", "return", "next", "timeout_next")
STATE_EXTENSIONS = (".md", ".sh", ".bat", ".ps1")
MAX_INVOCATIONS = 3
# Raymond's two patterns (policy.go): a `---` line may end in blanks, and the YAML between has one character at
# least (else only the empty form matches: `---` right after `---`).
_FRONTMATTER = lazy(r"---[ \t]*\n(.+?)\n---[ \t]*\n", re.DOTALL)
_EMPTY_FRONTMATTER = lazy(r"---[ \t]*\n---[ \t]*\n")
# What goes before a prompt that starts with `---` of its own, so that it stays text (for wfexec and Raymond).
EMPTY_FRONTMATTER = "---\n{}\n---\n"


class PolicyError(WfexecError, ValueError):
    """Frontmatter that cannot be read: `line` and `column` say where in the state file (0: not known); `detail` is
    what is wrong without where (a Raymond YAML state says it of its own line)."""

    def __init__(self, message: str = "", hint: str = "", line: int = 0, column: int = 0, detail: str = ""):
        super().__init__(message, hint)
        self.line, self.column = line, column
        self.detail = detail or message

    def __str__(self) -> str:
        return self.message + (f" — {self.hint}" if self.hint else "")


@dataclass(frozen=True)
class Policy:
    allowed: tuple = ()              # of dicts, each with a `tag`
    model: str | None = None
    effort: str | None = None
    force_implicit: bool = False
    unknown: tuple = ()              # names of fields wfexec ignores (a warning)

    @property
    def has_rules(self) -> bool:
        """A policy that constrains tags; only such a state is re-prompted."""
        return bool(self.allowed)

    def to_dict(self) -> dict:
        return {"allowed_transitions": [dict(e) for e in self.allowed], "model": self.model, "effort": self.effort,
                "force_implicit": self.force_implicit, "unknown": list(self.unknown)}


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """(frontmatter YAML or None, body)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    if not text.startswith("---"):
        return None, text
    found = _FRONTMATTER.match(text)
    if found is not None:
        return found.group(1) + "\n", text[found.end():]  # its lines whole, as YAML's errors count them
    found = _EMPTY_FRONTMATTER.match(text)
    if found is not None:
        return "", text[found.end():]
    return None, text


@functools.lru_cache(maxsize=256)
def parse_frontmatter(text: str) -> tuple[Policy | None, str]:
    """(policy or None, body). Raises PolicyError when the YAML or a field is malformed.

    Cached by text: a state that loops is parsed once (a Policy is never changed after it is built).
    """
    raw, body = split_frontmatter(text)
    if raw is None or not raw.strip():
        return None, body
    doc = _load_yaml(raw)
    data = doc.data
    if data is None or data == {}:
        return None, body
    if not isinstance(data, dict):
        raise PolicyError("the frontmatter must be a YAML mapping (allowed_transitions, model, effort, "
                          "force_implicit)", line=2, column=1)

    def where(path: tuple) -> tuple[int, int]:  # the frontmatter's YAML starts on the state file's line 2
        line, column = doc.positions.get(path) or doc.positions.get(()) or (1, 1)
        return line + 1, column

    return policy_from_mapping(data, where), body


def _NO_PLACE(path: tuple) -> tuple[int, int]:
    """Where a value of a policy mapping whose source is not known stands: nowhere known."""
    return 0, 0


def policy_from_mapping(data: dict, where=_NO_PLACE) -> Policy:
    """The policy of a frontmatter mapping (or of a Raymond YAML state's fields). `where(path)`: the (line, column)
    of the value at a YAML path (`("allowed_transitions", 0)`), for the errors."""
    entries = data.get("allowed_transitions")
    if entries is None:
        entries = []
    if not isinstance(entries, list):
        raise _error(where, ("allowed_transitions",),
                     f"`allowed_transitions` must be a list of entries, not {_kind(entries)}",
                     "write e.g. `allowed_transitions: [{tag: goto, target: NEXT}, {tag: result}]`")
    allowed = []
    for index, item in enumerate(entries):
        entry = _entry(item, index, where)
        if entry is not None:
            allowed.append(entry)
    policy = Policy(allowed=tuple(allowed), model=_word(data.get("model"), "model", where),
                    effort=_word(data.get("effort"), "effort", where),
                    force_implicit=_flag(data.get("force_implicit"), where),
                    unknown=tuple(str(k) for k in data if k not in FIELDS))
    # A force_implicit the policy cannot honour (several entries, an <ask>, a bare <result>) is ignored when
    # the state runs, as Raymond does; `wfexec validate` reports it (lint's force-implicit-invalid).
    return policy


def _load_yaml(raw: str):
    from wfexec.language.loader import load_text

    doc = load_text(raw, "<frontmatter>")
    if doc.diagnostics:
        problem = doc.diagnostics[0]
        raise PolicyError(f"invalid YAML frontmatter (line {problem.line + 1}): {problem.message}",
                          line=problem.line + 1, column=problem.column)
    return doc


def _error(where, path: tuple, message: str, hint: str = "") -> PolicyError:
    line, column = where(path)
    return PolicyError(f"invalid frontmatter{f' (line {line})' if line else ''}: {message}", hint, line, column,
                       detail=message)


def _kind(value) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the text {value!r}"
    return "a list" if isinstance(value, list) else "a mapping" if isinstance(value, dict) else repr(value)


def _entry(item, index: int, where) -> dict | None:
    """One allowed_transitions entry, each value as text; None for one Raymond drops (null, or without `tag`)."""
    path = ("allowed_transitions", index)
    if item is None:
        return None  # Raymond's decoder makes it an empty entry, which has no tag
    if not isinstance(item, dict):
        tag = item.strip() if isinstance(item, str) and item.strip() else "goto"
        example = {"result": "{tag: result}", "ask": "{tag: ask, next: NEXT}"}.get(tag, f"{{tag: {tag}, target: NEXT}}")
        raise _error(where, path, f"entry {index + 1} of `allowed_transitions` is {_kind(item)}, not a mapping "
                                  "(ray refuses it too)", f"write each entry as a mapping, e.g. `- {example}`")
    entry = {}
    for key, value in item.items():
        if isinstance(value, (list, dict)):
            raise _error(where, path + (key,), f"`{key}` of entry {index + 1} of `allowed_transitions` is "
                                               f"{_kind(value)}; an entry's values are text",
                         f"write one value, e.g. `{key}: NEXT`")
        entry[str(key)] = _text(value)
    return entry if "tag" in entry else None  # dropped silently, as Raymond does


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _word(value, name: str, where=_NO_PLACE) -> str | None:
    """`model` or `effort`, lower-cased: text, or a number's or a boolean's text (Raymond decodes any scalar into its
    string field; lint then says whether it is a model)."""
    if value is None:
        return None
    if isinstance(value, (list, dict)):
        raise _error(where, (name,), f"`{name}` is {_kind(value)}, not text", f"write e.g. `{name}: "
                     f"{'sonnet' if name == 'model' else 'high'}`")
    return _text(value).strip().lower() or None


# YAML 1.1's words for a boolean, which Raymond's decoder takes for its `bool` field (yaml.v3, decode.go).
_YES = frozenset(("y", "Y", "yes", "Yes", "YES", "on", "On", "ON"))
_NO = frozenset(("n", "N", "no", "No", "NO", "off", "Off", "OFF"))


def _flag(value, where=_NO_PLACE) -> bool:
    """`force_implicit`: true or false (YAML 1.1's yes/no/on/off/y/n too); none (or null) is false."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in _YES | _NO:
        return value in _YES
    raise _error(where, ("force_implicit",), f"`force_implicit` must be true or false, not {_kind(value)}",
                 "write `force_implicit: true`")


# -- implicit transitions ------------------------------------------------------

def implicit_entry(policy: Policy | None) -> dict | None:
    """The single entry a state may take without emitting a tag, or None."""
    if policy is None or len(policy.allowed) != 1:
        return None
    entry = policy.allowed[0]
    tag = entry.get("tag")
    if tag == "ask":
        return None
    if tag == "result":
        return entry if "payload" in entry else None
    return entry if entry.get("target") else None


def implicit_transition(entry: dict) -> Transition:
    """The transition an implicit entry stands for; every extra key becomes an attribute."""
    attributes = {k: v for k, v in entry.items() if k not in ("tag", "target", "payload")}
    return Transition(entry["tag"], entry.get("target", ""), attributes, entry.get("payload", ""))


# -- matching an emitted tag -----------------------------------------------------

def targets_match(allowed: str, actual: str) -> bool:
    """A policy target with no extension matches that stem with any state extension."""
    if allowed == actual:
        return True
    if os.path.splitext(allowed)[1]:
        return False
    stem, ext = os.path.splitext(actual)
    return stem == allowed and ext.lower() in STATE_EXTENSIONS


def check_transition(policy: Policy | None, transition: Transition) -> str | None:
    """None when `transition` (with resolved target, return and next) is allowed; else why not."""
    if policy is None or not policy.allowed:
        return None
    same_tag = [e for e in policy.allowed if e.get("tag") == transition.tag]
    if not same_tag:
        tags = ", ".join(dict.fromkeys(e.get("tag", "") for e in policy.allowed))
        return f'tag "{transition.tag}" is not allowed (allowed tags: {tags})'
    for entry in same_tag:
        if _entry_matches(entry, transition):
            return None
    shown = ", ".join(render_entry(e) for e in same_tag)
    return f"{transition.show()} matches no allowed {transition.tag} (allowed: {shown})"


def _entry_matches(entry: dict, transition: Transition) -> bool:
    if transition.tag == "result" and "payload" in entry and entry["payload"] != transition.payload.strip():
        return False
    for key in MATCH_KEYS:
        if key not in entry:
            continue
        actual = transition.target if key == "target" else transition.attributes.get(key)
        if actual is None or not targets_match(entry[key], actual):
            return False
    return True


# -- the reminder ----------------------------------------------------------------

def render_entry(entry: dict) -> str:
    """One allowed transition as the reminder shows it (Raymond's GenerateReminderPrompt, key for key)."""
    tag = entry.get("tag", "")
    attributes = "".join(f" {k}={_quote(str(entry[k]))}" for k in sorted(entry) if k not in ("tag", "target"))
    if tag == "result":
        return f"<result>{entry['payload']}</result>" if "payload" in entry else "<result>...</result>"
    if tag == "ask":
        return f"<ask{attributes}>[human-facing prompt here]</ask>"
    return f"<{tag}{attributes}>{entry.get('target') or 'TARGET'}</{tag}>"


def _quote(value: str) -> str:
    return f"'{value}'" if '"' in value else f'"{value}"'


def reminder(policy: Policy) -> str:
    """The block appended to the prompt when a state's output broke its policy (Raymond's exact format)."""
    lines = ["", "---", "REMINDER: Emit exactly one of these tags (target names are literal, not placeholders):", ""]
    lines += [f"{n}. {render_entry(entry)}" for n, entry in enumerate(policy.allowed, 1)]
    lines += ["", "Emit exactly one of the above tags.", "---"]
    return "\n".join(lines)
