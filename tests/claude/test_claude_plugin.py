"""The repository as a Claude Code plugin marketplace: its `wfexec` plugin passes the real Claude Code CLI's
`claude plugin validate` without a warning, installs from a local marketplace into a temporary HOME, and
`claude plugin details` lists its MCP server, language server and skill. The CLI comes from the npm registry
(`.ci/run` installs it into `.claude-cli/`); without it those tests skip and say how to install it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

PLUGIN = ROOT / "claude" / "wfexec"
INSTALL_HINT = ("needs the Claude Code CLI from npm: npm install --prefix .claude-cli @anthropic-ai/claude-code "
                "(.ci/run does)")


def _claude() -> str | None:
    local = ROOT / ".claude-cli" / "node_modules" / ".bin" / "claude"
    return str(local) if local.exists() else shutil.which("claude")


@pytest.fixture
def claude(tmp_path):
    """Runs the real CLI with a HOME of its own (nothing of the user's ~/.claude is read or written), offline."""
    program = _claude()
    if program is None:
        pytest.skip(INSTALL_HINT)
    home = tmp_path / "home"
    home.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("CLAUDE", "ANTHROPIC"))}
    env.update(HOME=str(home), DISABLE_AUTOUPDATER="1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")

    def run(*args: str) -> str:
        done = subprocess.run([program, "plugin", *args], capture_output=True, text=True, env=env, timeout=300,
                              stdin=subprocess.DEVNULL, cwd=tmp_path)
        assert done.returncode == 0, f"claude plugin {' '.join(args)}: {done.stdout}{done.stderr}"
        return done.stdout + done.stderr

    return run


def test_the_plugin_and_the_marketplace_validate_without_a_warning(claude):
    for path, manifest in ((PLUGIN, "plugin"), (ROOT, "marketplace")):
        shown = claude("validate", "--strict", str(path))
        assert f"Validating {manifest} manifest" in shown
        assert "Validation passed" in shown
        assert "warning" not in shown.lower() and "⚠" not in shown, shown


def test_installed_from_the_local_marketplace_it_brings_its_servers_and_skill(claude):
    assert "Successfully added marketplace: wfexec" in claude("marketplace", "add", str(ROOT))
    assert "Successfully installed plugin: wfexec@wfexec" in claude("install", "wfexec@wfexec")
    details = claude("details", "wfexec")
    assert "MCP servers (1)  wfexec" in details
    assert "LSP servers (1)  wfexec" in details
    assert "Skills (1)  author-workflow" in details


def test_the_servers_it_declares_are_wfexec_commands():
    """What Claude Code will start: `wfexec mcp …` and `wfexec lsp`, both real commands of this wfexec."""
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    mcp = json.loads((PLUGIN / manifest["mcpServers"]).read_text())["mcpServers"]["wfexec"]
    lsp = manifest["lspServers"]["wfexec"]
    assert {".yaml", ".yml", ".md", ".sh"} <= set(lsp["extensionToLanguage"])
    for server in (mcp, lsp):
        assert server["command"] == "wfexec"
        done = subprocess.run([sys.executable, "-m", "wfexec", server["args"][0], "--help"], capture_output=True,
                              text=True)
        assert done.returncode == 0, done.stderr


def test_its_skill_is_a_valid_agent_skill():
    import skills_ref

    folder = PLUGIN / "skills" / "author-workflow"
    assert skills_ref.validate(folder) == []
    assert "wfexec validate" in (folder / "SKILL.md").read_text()
