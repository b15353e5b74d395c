"""Node types: one module per type, each declaring a `NodeType` registered in the entry-point group
`wfexec.nodes` (see `wfexec.nodes.base`). Nothing here imports them: they are looked up by name.

A plugin's node type imports what it needs from here:
`from wfexec.nodes import NodeType, Outcome, Question, Choice, TARGET, Docs, Drawing, Skill, Checks`,
and annotates its `execute(node, ctx: NodeContext)`.
"""

from wfexec.nodes.base import (CONSEQUENCE, CONSEQUENCES, PRECONDITION, TARGET, Choice, NodeType, Outcome,
                               Question)
from wfexec.nodes.context import AgentSteps, NodeContext
from wfexec.nodes.parts import Checks, Docs, Drawing, Skill

__all__ = ["CONSEQUENCE", "CONSEQUENCES", "PRECONDITION", "TARGET", "AgentSteps", "Checks", "Choice", "Docs",
           "Drawing", "NodeContext", "NodeType", "Outcome", "Question", "Skill"]
