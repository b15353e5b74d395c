"""Node types: one module per type, each declaring a `NodeType` registered in the entry-point group
`wfexec.nodes` (see `wfexec.nodes.base`). Nothing here imports them: they are looked up by name.

A plugin's node type imports what it needs from here:
`from wfexec.nodes import NodeType, Outcome, Question, Choice, TARGET`.
"""

from wfexec.nodes.base import (CONSEQUENCE, CONSEQUENCES, PRECONDITION, TARGET, Choice, NodeType, Outcome,
                               Question)

__all__ = ["CONSEQUENCE", "CONSEQUENCES", "PRECONDITION", "TARGET", "Choice", "NodeType", "Outcome", "Question"]
