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
    """Frontmatter that cannot be read."""


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
    data = _load_yaml(raw)
    if data is None or data == {}:
        return None, body
    if not isinstance(data, dict):
        raise PolicyError("the frontmatter must be a YAML mapping (allowed_transitions, model, effort, "
                          "force_implicit)")
    return policy_from_mapping(data), body


def policy_from_mapping(data: dict) -> Policy:
    entries = data.get("allowed_transitions")
    if entries is None:
        entries = []
    if not isinstance(entries, list):
        raise PolicyError("`allowed_transitions` must be a list of entries such as `{tag: goto, target: NEXT}`")
    force = data.get("force_implicit", False)
    if not isinstance(force, bool):
        raise PolicyError(f"`force_implicit` must be true or false, not {force!r}")
    policy = Policy(allowed=tuple(e for e in (_entry(item) for item in entries) if e is not None),
                    model=_word(data.get("model"), "model"), effort=_word(data.get("effort"), "effort"),
                    force_implicit=force, unknown=tuple(str(k) for k in data if k not in FIELDS))
    # A force_implicit the policy cannot honour (several entries, an <ask>, a bare <result>) is ignored when
    # the state runs, as Raymond does; `wfexec validate` reports it (lint's force-implicit-invalid).
    return policy


def _load_yaml(raw: str):
    from wfexec.language.loader import load_text

    doc = load_text(raw, "<frontmatter>")
    if doc.diagnostics:
        problem = doc.diagnostics[0]
        raise PolicyError(f"invalid YAML frontmatter (line {problem.line + 1}): {problem.message}")
    return doc.data


def _entry(item) -> dict | None:
    if isinstance(item, str):
        return {"tag": item.strip()}
    if not isinstance(item, dict) or "tag" not in item:
        return None  # dropped silently, as Raymond does
    return {str(k): _text(v) for k, v in item.items()}


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _word(value, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise PolicyError(f"`{name}` must be a string, not {value!r}")
    return value.strip().lower() or None


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
