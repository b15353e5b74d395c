"""One function decides every exit code (DESIGN §7), from an ending, a run status or an exception."""

from __future__ import annotations

import pytest

from wfexec.durable.journal import ResumeRefused
from wfexec.durable.store import StoreError
from wfexec.exit_codes import exit_code_for
from wfexec.language.diagnostics import WorkflowError
from wfexec.protocol.errors import BackendMissing, ProtocolError
from wfexec.running.engine import EntryGateFailed, InternalError, RunError, RunStopped
from wfexec.language.inputs import InputError
from wfexec.types.registry import BrokenPlugins, PluginError


@pytest.mark.parametrize("outcome, code", [
    ("success", 0), ("completed", 0),
    ("failure", 1), ("error", 1), ("cancelled", 1), ("failed", 1),
    ("invalid", 2), ("waiting", 3), ("stopped", 4),
])
def test_endings_and_statuses(outcome, code):
    assert exit_code_for(outcome) == code


@pytest.mark.parametrize("error, code", [
    (RunError("x"), 1), (EntryGateFailed("x"), 1), (InternalError("x"), 1), (ValueError("a bug"), 1),
    (WorkflowError([]), 2), (InputError("x"), 2), (StoreError("x"), 2), (ProtocolError("x"), 2),
    (BrokenPlugins([PluginError("dist", "ep", "x")]), 2), (ResumeRefused("x"), 2),
    (ResumeRefused("x", awaits_decision=True), 3),
    (RunStopped("x"), 4), (BackendMissing("x"), 4), (KeyboardInterrupt(), 4),
])
def test_exceptions(error, code):
    assert exit_code_for(error) == code
