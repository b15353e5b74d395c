"""The size limits of what wfexec reads, each raised (or lowered) by an environment variable.

Apart from the loader (`wfexec.language.loader`), which enforces them: the compiled-workflow cache checks a file's
size before reading it, on every start, without importing the loader.
"""

from __future__ import annotations

import os

# A workflow file is text a person wrote; anything bigger is refused unread.
MAX_FILE_BYTES = 16 * 1024 * 1024
FILE_BYTES_VARIABLE = "WFEXEC_MAX_FILE_BYTES"


def limit(variable: str, default: int) -> int:
    """A size limit, raised (or lowered) by setting `variable` to a whole number; anything else keeps `default`."""
    try:
        return max(1, int(os.environ.get(variable, "").replace("_", "")))
    except ValueError:
        return default


def max_file_bytes() -> int:
    return limit(FILE_BYTES_VARIABLE, MAX_FILE_BYTES)
