"""One engine, many doors (DESIGN §1): over MCP, with the SDK's own client, the tools say and do what the command
line does for the same thing asked; the API's side is tests/api/test_doors.py."""

from __future__ import annotations

import json

import pytest

from conftest import wfexec_in_process as cli

pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'wfexec[mcp]')")
from test_mcp import with_server  # noqa: E402


def test_a_missing_path_is_named_as_the_command_line_names_it(tmp_path):
    """It was `not-a-workflow: … is not a workflow` over MCP, `file-missing: no such file: wf/typo` elsewhere."""
    (tmp_path / "wf").mkdir()

    async def body(session):
        return [(await session.call_tool(tool, {"path": "wf/typo"})).structured_content for tool in ("validate", "run")]

    validated, ran = with_server(tmp_path, body)
    said = json.loads(cli("validate", "wf/typo", "--format", "json", cwd=tmp_path).stdout)["diagnostics"]
    assert [(d["code"], d["message"]) for d in said] == [("file-missing", "no such file: wf/typo")]
    assert validated["diagnostics"] == said and not validated["valid"]
    assert ran["status"] == "invalid" and ran["diagnostics"] == said
