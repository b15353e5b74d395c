"""Runs on a Temporal cluster (DESIGN §5, docs/guide/many-machines.md), for when one machine's SQLite store
is not enough.

How wfexec's model maps onto Temporal:
- a run is a workflow execution (`wfexec.temporal.workflow_code.WfexecRun`), its id the run's id;
- the engine loop is the workflow code, and deterministic: the clock is `workflow.now()`, the `env.` names it
  reads were sent with the run, and the compiled workflow is checked against the hash the run started with;
- a step that only changes state runs inside the workflow code: Temporal's history holds only what effect
  steps returned and the answers given, and replaying re-runs the state-only steps;
- a step with outside effects (what `wfexec.durable.journal.has_outside_effects` says, as the SQLite journal
  decides it) is an activity (`wfexec.temporal.activities`): a local activity of the worker running the run when
  it is short and idempotent (`wfexec.temporal.local_steps`), else one that heartbeats while it runs. An
  idempotent one is retried on any worker; a non-idempotent one gets one attempt, and when that attempt is lost
  the run asks "rerun or skip?", as `wfexec resume` does;
- a question is an update (`answer`) the run waits for; `progress` is a query.

Nothing here is imported unless a command is given `--temporal`: `temporalio` is an optional extra
(`wfexec[temporal]`), and `require_temporalio` says how to install it.
"""

from __future__ import annotations

from wfexec.errors import WfexecError

DEFAULT_TASK_QUEUE = "wfexec"
WORKFLOW_NAME = "WfexecRun"
INSTALL_HINT = "pip install 'wfexec[temporal]'"


class TemporalUnavailable(WfexecError):
    """The cluster cannot be used: the extra is not installed, or the server does not answer (exit 5)."""

    outcome = "unavailable"


def require_temporalio() -> None:
    """Raise TemporalUnavailable, saying how to install it, when the Temporal SDK is missing."""
    try:
        import temporalio  # noqa: F401
    except ImportError:
        raise TemporalUnavailable("running on a Temporal cluster needs the temporalio SDK, which is not installed",
                                  f"install it with: {INSTALL_HINT}") from None
