"""(being written)"""

from ..registry import TypeList

TYPES = TypeList()
