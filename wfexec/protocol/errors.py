"""What can go wrong while running a states folder, sorted by how the node reacts."""

from __future__ import annotations

from wfexec.errors import WfexecError


class ProtocolError(WfexecError):
    """A state broke a rule of the protocol, or a script failed: the node routes `on_failure`."""

    # What the LLM turns of the state that failed cost (a failed turn's included): already in the run's budget
    # here, and told to a runner that keeps the agents elsewhere with a state that is tried again or paused.
    cost_usd = 0.0

    def __str__(self) -> str:
        return self.message + (f" — {self.hint}" if self.hint else "")


class ScopeError(ProtocolError):
    """The states folder itself is unusable: missing, malformed, unsafe, no entry point."""


class StopRun(ProtocolError):
    """The run must stop (exit 4): no backend, an unusable backend (a replay that diverged), the step budget.

    Never routed to `on_failure`: these say something about how wfexec was run, not about the states.
    """

    outcome = "stopped"

    routable = False


class BudgetExceeded(StopRun):
    """The cost budget was used up before an LLM call: routed to `on_failure` when the node has one."""

    routable = True


class BackendMissing(StopRun):
    """An `.md` state was reached and no LLM backend is configured."""


class StepLimit(StopRun):
    """More protocol states ran than the run's step budget allows."""


class Retryable(ProtocolError):
    """A state could not be run this time (its prompt file is missing, the LLM backend failed or went
    silent): tried again, and after MAX_ATTEMPTS failures in a row its agent is paused (reference §1.16)."""


class UsageLimit(ProtocolError):
    """The LLM backend said the account's usage limit is reached: the agent is paused at once, and the run
    waits for the reset time when the message gives one."""


class PausesAgent(ProtocolError):
    """What Raymond answers by pausing the one agent (the others go on; resume runs its state again)."""


class WorkflowUnreachable(PausesAgent):
    """A cross-workflow tag names a workflow that cannot be used (missing, malformed, nested too deep)."""


class ForkGroupInvalid(PausesAgent):
    """A prompt's reply holds forks that do not make one multi-fork (no continuation, `next` values that
    differ, a tag that is not a fork or goto among them)."""
