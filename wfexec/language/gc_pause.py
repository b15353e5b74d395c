"""Reading and checking a workflow with Python's cyclic garbage collector paused.

Loading a big workflow allocates hundreds of thousands of small containers (values, source positions, compiled
nodes) that all stay alive until the check ends. Each collection the allocations trigger walks all of them again
to find nothing: about a third of validating a 10,000-node workflow. They hold no reference cycles worth
collecting early, so the collector waits until the check is over.

When it is over, what the check made and still holds (the document, the compiled workflow) is moved to the
collector's oldest generation at once (`gc.freeze` then `gc.unfreeze`: two list splices), instead of being walked
by the next young collection and again by the middle one on its way there: those walks found nothing either, and
cost 2-5% of a cold validate in a new process at 5,000 nodes, 5% at 50,000 (where the heap no longer fits in the
CPU's caches). A cycle that became garbage during the check waits for the next full collection, as any old
object's does. Not when something else froze objects (a server that forks, say): unfreezing would undo that, so
the collector walks then.
"""

from __future__ import annotations

import functools
import gc

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, TypeVar

    Result = TypeVar("Result")


def collector_paused(work: Callable[..., Result]) -> Callable[..., Result]:
    """`work`, run with the collector paused (and resumed after, unless it was already off: calls nest)."""

    @functools.wraps(work)
    def paused(*args, **kwargs) -> Result:
        if not gc.isenabled():
            return work(*args, **kwargs)
        gc.disable()
        try:
            return work(*args, **kwargs)
        finally:
            if not gc.get_freeze_count():
                gc.freeze()  # every tracked object, young ones included, to the permanent generation
                gc.unfreeze()  # and back, into the oldest
            gc.enable()

    return paused
