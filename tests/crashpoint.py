"""Run the real `wfexec` command and SIGKILL it at an exact point of its SQLite traffic.

    python tests/crashpoint.py after-commit N -- run workflow.yaml
    python tests/crashpoint.py mid-commit N -- run workflow.yaml
    python tests/crashpoint.py before-statement PATTERN K -- resume RUN --rerun

- `after-commit N`: the transaction that journals step N has committed; the process dies at the next statement
  it starts (nothing after step N is durable: the next step's in-flight mark, or the final status).
- `mid-commit N`: the process dies as it commits the journal row holding step N (at its COMMIT, or as the row's
  INSERT starts when that statement is a transaction of its own): the store must come back as it was before.

How: every SQLite connection the process opens gets a trace callback (`sqlite3.Connection.set_trace_callback`
sees each statement, with its bound values, as it starts). The product has no test-only branch for this;
the price is that this file knows the journal's INSERT statement, so a test using it asserts the process really
died by SIGKILL: if that statement ever changes, the test fails instead of passing without a crash.
"""

from __future__ import annotations

import os
import re
import _sqlite3
import signal
import sqlite3
import sys

# A journal row's values start with its key (the run's number << 32 | the row's first step) and its last step.
JOURNAL_INSERT = re.compile(r"INSERT OR REPLACE INTO journal VALUES \((\d+), (\d+),")
FIRST_STEP = (1 << 32) - 1  # the bits of the key that are the row's first step (wfexec.durable.store.STEP_BITS)
POINTS = ("after-commit", "mid-commit", "before-statement")


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _trace_every_connection(trace) -> None:
    connect = sqlite3.connect

    def connect_traced(*args, **kwargs):
        db = connect(*args, **kwargs)
        db.set_trace_callback(trace)
        return db

    # the run store opens its connections through the C module the sqlite3 package wraps (wfexec.durable.store)
    sqlite3.connect = _sqlite3.connect = connect_traced


def install_before_statement(pattern: str, count: int) -> None:
    wanted = re.compile(pattern)
    seen = 0

    def trace(statement: str) -> None:
        nonlocal seen
        if wanted.search(statement):
            seen += 1
            if seen == count:
                _die()

    _trace_every_connection(trace)


def install(point: str, step: int) -> None:
    journaled: list[tuple[int, int]] = []  # (first, last) steps written in the open transaction
    in_transaction = False
    armed_after: str | None = None  # the statement that committed step N: the process dies at the next one

    def trace(statement: str) -> None:
        nonlocal in_transaction, armed_after
        # A trigger's statements are traced with the text of the statement that fired them: still that one.
        if armed_after is not None and statement != armed_after:
            _die()
        match = JOURNAL_INSERT.match(statement)
        if match:
            first, last = int(match.group(1)) & FIRST_STEP, int(match.group(2))
            holds_step = first <= step <= last
            if in_transaction:
                journaled.append((first, last))
            elif holds_step:  # a row committed on its own: the statement is the transaction
                if point == "mid-commit":
                    _die()
                armed_after = statement
        elif statement.startswith("BEGIN"):
            in_transaction = True
        elif statement == "ROLLBACK":
            in_transaction = False
            journaled.clear()
        elif statement == "COMMIT":
            in_transaction = False
            holds_step = any(first <= step <= last for first, last in journaled)
            journaled.clear()
            if holds_step:
                if point == "mid-commit":
                    _die()
                armed_after = statement

    _trace_every_connection(trace)


def main() -> None:
    point, *where = sys.argv[1:]
    arity = 2 if point == "before-statement" else 1
    where, separator, args = where[:arity], where[arity:arity + 1], where[arity + 1:]
    if point not in POINTS or separator != ["--"]:
        sys.exit("usage: crashpoint.py {after-commit|mid-commit} STEP -- WFEXEC-ARGS\n"
                 "       crashpoint.py before-statement PATTERN K -- WFEXEC-ARGS")
    if point == "before-statement":
        install_before_statement(where[0], int(where[1]))
    else:
        install(point, int(where[0]))
    sys.argv = ["wfexec", *args]
    from wfexec.launcher import main as wfexec_main  # what the `wfexec` command runs

    wfexec_main()


if __name__ == "__main__":
    main()
