"""Process exit codes (DESIGN §7), and the one function that decides them.

Commands call `exit_code_for` with however their work ended; nothing else in
the package knows these numbers (the run loop reports errors and endings, the
command line turns them into a code).
"""

from __future__ import annotations

OK = 0              # a success ending
ENDING_FAILED = 1   # a failure/error/cancelled ending, a failed entry gate, a run-time error
INVALID = 2         # the workflow is invalid, or the command line is wrong
WAITING = 3         # the run waits for an answer (or a decision) before it can go on
STOPPED = 4         # step budget, interrupt, no backend
UNAVAILABLE = 5     # the Temporal cluster cannot be reached, or wfexec[temporal] is not installed

# Ending types and run statuses (store, `wfexec states`) alike.
_BY_WORD = {
    "success": OK, "completed": OK,
    "failure": ENDING_FAILED, "error": ENDING_FAILED, "cancelled": ENDING_FAILED, "failed": ENDING_FAILED,
    "invalid": INVALID,
    "waiting": WAITING,
    "stopped": STOPPED,
    "unavailable": UNAVAILABLE,
}


def exit_code_for(outcome: str | BaseException) -> int:
    """The exit code for an ending type (`success`, `failure`, …), a run status (`completed`, `waiting`,
    `stopped`, …) or an exception that ended the command."""
    if isinstance(outcome, str):
        return _BY_WORD[outcome]
    if isinstance(outcome, KeyboardInterrupt):
        return STOPPED
    # Each wfexec error (and NeedsAnswer) names its own outcome; anything else is a bug: reported as an
    # internal error.
    return _BY_WORD.get(getattr(outcome, "outcome", "failed"), ENDING_FAILED)
