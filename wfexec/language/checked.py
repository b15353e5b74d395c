"""What checking a workflow file gave: the one object the compiled-workflow cache keeps per file.

Apart from `summary`, so that a command that finds its workflow in the cache unpickles this small class without
importing the summary's (nor the prose detector's) code.
"""

from __future__ import annotations

import functools
from wfexec.records import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any
    from wfexec.language.summary import Summary


@dataclass(frozen=True)
class Checked:
    """What checking a workflow file gave (kept as it is by the compiled-workflow cache)."""

    workflow: Any                      # the Workflow; None when there are errors
    diagnostics: list                  # of Diagnostic
    raw_nodes: dict | None = None      # None when the file could not be read as a workflow
    nodes: dict | None = None          # the nodes that compiled
    data: dict | None = None           # the file as compiled (a v8 file: after its rewrite)
    composite_of: dict | None = None   # v8: each node a composite expanded into → (composite, type)
    targets: tuple = ()                # ((line, column), name) of each target written out: for editors

    @functools.cached_property
    def summary(self) -> Summary | None:
        """How many nodes run as code, ask a person, or go to the LLM (worked out once, when first asked)."""
        from wfexec.language.summary import summarise

        return summarise(self.raw_nodes, self.nodes or {}) if self.raw_nodes is not None else None

    def __getstate__(self) -> dict:
        # Kept without the summary: unpickling it would import the summary's code (see the module's docstring).
        return {name: value for name, value in self.__dict__.items() if name != "summary"}

