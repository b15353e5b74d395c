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

# Ending types and run statuses (store, `wfexec states`) alike.
_BY_WORD = {
    "success": OK, "completed": OK,
    "failure": ENDING_FAILED, "error": ENDING_FAILED, "cancelled": ENDING_FAILED, "failed": ENDING_FAILED,
    "invalid": INVALID,
    "waiting": WAITING,
    "stopped": STOPPED,
}


def exit_code_for(outcome: str | BaseException) -> int:
    """The exit code for an ending type (`success`, `failure`, …), a run status (`completed`, `waiting`,
    `stopped`, …) or an exception that ended the command."""
    if isinstance(outcome, str):
        return _BY_WORD[outcome]
    # Imported here: these modules are loaded by the time anything failed, and `wfexec --help` stays fast.
    from wfexec.durable.journal import ResumeRefused
    from wfexec.errors import WfexecError
    from wfexec.protocol.errors import StopRun
    from wfexec.running.engine import RunError, RunStopped
    from wfexec.running.prompts import NeedsAnswer

    if isinstance(outcome, KeyboardInterrupt):
        return STOPPED
    if isinstance(outcome, NeedsAnswer):
        return WAITING
    if isinstance(outcome, ResumeRefused):
        return WAITING if outcome.awaits_decision else INVALID
    if isinstance(outcome, (RunStopped, StopRun)):
        return STOPPED
    if isinstance(outcome, RunError):  # a run-time error, a failed entry gate, a bug met inside a node
        return ENDING_FAILED
    if isinstance(outcome, WfexecError):  # invalid workflow, inputs, answers, store, plugin, command line
        return INVALID
    return ENDING_FAILED  # a bug outside any run: reported as an internal error
