"""Regular expressions compiled when first used.

Compiling a pattern costs from a tenth of a millisecond to a millisecond, and a module's patterns are compiled
when it is imported: `wfexec run` imported a dozen that a run of a cached workflow never uses. `lazy` gives an
object that stands for `re.compile(pattern, flags)` and compiles on the first method call.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class _Lazy:
    def __init__(self, pattern: str, flags: int) -> None:
        self._args = (pattern, flags)

    def __getattr__(self, name: str) -> Any:  # a name not looked up before: compile (once), then keep it here
        compiled = self.__dict__.get("_compiled")
        if compiled is None:
            compiled = self.__dict__["_compiled"] = re.compile(*self._args)
        value = getattr(compiled, name)
        setattr(self, name, value)
        return value


def lazy(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """`re.compile(pattern, flags)`, compiled on first use."""
    return _Lazy(pattern, flags)  # type: ignore[return-value]  # it answers as the compiled pattern would
