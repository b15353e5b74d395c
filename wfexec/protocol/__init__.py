"""The md/sh state protocol (DESIGN §4, reference/raymond-state-protocol.md).

A states folder is a flat set of `.md` prompts and `.sh` scripts; each state
ends by emitting one transition tag (`<goto>`, `<reset>`, `<call>`,
`<function>`, `<fork>`, `<result>`). Modules, in the order data flows:

| module | job |
|---|---|
| `tags` | finding transition tags (and `<print>`) in output |
| `policy` | `.md` frontmatter: allowed transitions, implicit ones, the reminder |
| `scopes` | directory / zip / YAML / inline scopes; name → file resolution; path safety |
| `templates` | one-pass `{{name}}` substitution |
| `processes` | asyncio subprocesses with an inactivity timeout and process-group kill |
| `executors` | one script state → its resolved transitions; the transition checks every state shares |
| `prompt_states` | one `.md` prompt state → its resolved transitions (imported when one first runs) |
| `agents` | agents, return stacks, forks: what each transition does (plain, serialisable data) |
| `budget` | the cost budget, checked before every LLM call |
| `orchestrator` | every agent, concurrently, to the end |

`wfexec states PATH` (a folder run on its own) is a command: `wfexec.commands.states`.
"""

from __future__ import annotations

from wfexec.protocol.errors import BackendMissing, BudgetExceeded, ProtocolError, ScopeError, StepLimit, StopRun

__all__ = ["BackendMissing", "BudgetExceeded", "ProtocolError", "ScopeError", "StepLimit", "StopRun"]

