"""Blueprint-lib v8, second part (issue 16): `mcp_tool_call` against a real MCP server (written here with the SDK,
started over stdio from a `.mcp.json` the test writes), `payload_types` and `declared_effects`. Fixtures of our own."""

from __future__ import annotations

import json
import re
import sys
import textwrap

import pytest

from conftest import wfexec_cli, wfexec_in_process as cli

pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'wfexec[mcp]')")

SERVER = '''\
import sys, time
from typing import Any
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer(name="eightball-tools", version=sys.argv[1] if len(sys.argv) > 1 else "1.4.0")

@server.tool()
def shake(question: str, context: str = "") -> str:
    """Answer a yes/no question."""
    return f"Signs point to yes: {question}" + (f" ({context})" if context else "")

@server.tool()
def lookup(q: str, limit: int = 10) -> dict[str, Any]:
    """Find customers."""
    return {"hits": [q.upper()] * min(limit, 2), "count": min(limit, 2)}

@server.tool()
def explode(reason: str) -> str:
    """Always fails."""
    raise ToolError(f"cannot shake: {reason}")

@server.tool()
def slow(seconds: float) -> str:
    """Sleeps."""
    time.sleep(seconds)
    return "done"

server.run("stdio")
'''


def setup(tmp_path, workflow: str, server_args=(), config=True):
    (tmp_path / "server.py").write_text(SERVER)
    if config:
        (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"eightball-tools": {
            "command": sys.executable, "args": ["${CLAUDE_PLUGIN_ROOT}/server.py", *server_args]}}}))
    path = tmp_path / "workflow.yaml"
    path.write_text(textwrap.dedent(workflow))
    return path


HEAD = """\
    name: v8-mcp
    version: "1.0.0"
    trust_mode: stateless
    data_mcps:
      eightball: "eightball-tools@^1"
    payload_types:
      shake_params@1:
        question: "string (min_length=1)"
        context: "string (optional)"
    initial_state:
      computed: {question: "Will it ship?"}
    start_node: ask
    default_error: failed
"""
TAIL = """\
      done:
        type: ending
        outcome: success
        message: "${computed.answer}"
      failed:
        type: ending
        outcome: error
        message: "Failed: ${computed.last_error}"
"""


def workflow(steps: str, head: str = HEAD) -> str:
    return head + "    nodes:\n      ask:\n        type: action\n        consequences:\n" + \
        textwrap.indent(textwrap.dedent(steps), " " * 10) + "        on_success: done\n" + TAIL


def run(tmp_path, path, *extra, env=None):
    done = wfexec_cli("run", path, "--format", "json", "--store", tmp_path / "runs.db", *extra, cwd=tmp_path,
                      env=env, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    return done, (json.loads(done.stdout) if done.stdout.strip().startswith("{") else None)


def validate(path):
    done = cli("validate", path)
    return done.returncode, done.stdout + done.stderr


def line_of(path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


# -- mcp_tool_call --------------------------------------------------------------------------------------------

def test_a_tool_is_called_over_stdio_and_its_results_stored(tmp_path):
    path = setup(tmp_path, workflow("""\
        - type: mcp_tool_call
          tool: eightball.shake
          params_type: shake_params@1
          params:
            question: "${computed.question}"
          store_as: computed.answer
        - type: mcp_tool_call
          tool: eightball.lookup
          params: {q: acme, limit: "${1 + 0}"}
          store_as: computed.hits
    """))
    done, result = run(tmp_path, path)
    assert done.returncode == 0, done.stderr
    assert result["message"] == "Signs point to yes: Will it ship?"
    assert result["state"]["computed"]["answer"] == "Signs point to yes: Will it ship?"
    assert result["state"]["computed"]["hits"] == {"hits": ["ACME"], "count": 1}
    assert result["state"]["mcp_calls"] == {"eightball": 2}


def test_an_unknown_tool_is_a_failure_naming_alias_tool_and_the_tools_listed(tmp_path):
    path = setup(tmp_path, workflow("""\
        - type: mcp_tool_call
          tool: eightball.shak
          params: {question: hi}
          store_as: computed.answer
    """))
    done, result = run(tmp_path, path)
    assert done.returncode == 1 and result["ending"] == "failed"
    error = result["state"]["computed"]["last_error"]
    assert "eightball.shak" in error and "no tool 'shak'" in error and "shake" in error


def test_a_tool_error_result_is_a_failure_with_the_servers_message(tmp_path):
    path = setup(tmp_path, workflow("""\
        - type: mcp_tool_call
          tool: eightball.explode
          params: {reason: gravity}
    """))
    done, result = run(tmp_path, path)
    assert done.returncode == 1 and result["ending"] == "failed"
    error = result["state"]["computed"]["last_error"]
    assert "eightball.explode" in error and "returned an error" in error and "cannot shake: gravity" in error


def test_a_server_no_config_names_is_a_failure_saying_how_to_configure_it(tmp_path):
    path = setup(tmp_path, workflow("""\
        - type: mcp_tool_call
          tool: eightball.shake
          params: {question: hi}
    """), config=False)
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"other": {"command": "true"}}}))
    done, result = run(tmp_path, path)
    assert done.returncode == 1
    error = result["state"]["computed"]["last_error"]
    assert "MCP server 'eightball-tools' (data_mcps.eightball) is not configured" in error
    assert str(tmp_path / ".mcp.json") in error


def test_a_server_program_that_does_not_exist_and_one_that_is_no_mcp_server_fail_clearly(tmp_path):
    path = setup(tmp_path, workflow("""\
        - type: mcp_tool_call
          tool: eightball.shake
          params: {question: hi}
    """), config=False)
    config = tmp_path / "elsewhere.json"
    config.write_text(json.dumps({"mcpServers": {"eightball-tools": {"command": "no-such-mcp-server-program"}}}))
    done, result = run(tmp_path, path, env={"WFEXEC_MCP_CONFIG": str(config)})
    assert done.returncode == 1
    assert "no program 'no-such-mcp-server-program'" in result["state"]["computed"]["last_error"]
    config.write_text(json.dumps({"mcpServers": {"eightball-tools": {
        "command": sys.executable, "args": ["-c", "import sys; print('not json'); sys.exit(3)"]}}}))
    done, result = run(tmp_path, path, env={"WFEXEC_MCP_CONFIG": str(config)})
    assert done.returncode == 1
    assert "server 'eightball-tools' (alias eightball) failed" in result["state"]["computed"]["last_error"]


def test_a_slow_tool_times_out(tmp_path):
    path = setup(tmp_path, workflow("""\
        - type: mcp_tool_call
          tool: eightball.slow
          params: {seconds: 30}
          timeout: 3
    """))
    done, result = run(tmp_path, path)
    assert done.returncode == 1
    assert "did not answer within 3 s" in result["state"]["computed"]["last_error"]


def test_a_server_outside_the_version_range_is_not_called(tmp_path):
    path = setup(tmp_path, workflow("""\
        - type: mcp_tool_call
          tool: eightball.shake
          params: {question: hi}
          store_as: computed.answer
    """), server_args=["2.0.1"])
    done, result = run(tmp_path, path)
    assert done.returncode == 1
    assert "reports version 2.0.1, outside ^1" in result["state"]["computed"]["last_error"]
    assert "answer" not in result["state"]["computed"]


def test_without_the_sdk_the_call_says_what_to_install(tmp_path):
    path = setup(tmp_path, workflow("""\
        - type: mcp_tool_call
          tool: eightball.shake
          params: {question: hi}
    """))
    (tmp_path / "blocker").mkdir()
    (tmp_path / "blocker" / "sitecustomize.py").write_text("import sys\nsys.modules['mcp'] = None\n")
    import os

    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path / "blocker"), os.environ.get("PYTHONPATH", "")])}
    done, result = run(tmp_path, path, env=env)
    assert done.returncode == 1
    assert "pip install 'wfexec[mcp]'" in done.stderr + json.dumps(result)


def test_the_call_is_an_outside_effect_a_dry_run_does_not_make(tmp_path):
    path = setup(tmp_path, workflow("""\
        - type: mcp_tool_call
          tool: eightball.shake
          params: {question: hi}
          store_as: computed.answer
    """))
    done = wfexec_cli("run", path, "--dry-run", cwd=tmp_path, timeout=120)
    assert "would mcp_tool_call eightball.shake" in done.stdout + done.stderr
    from wfexec.types.registry import consequences

    spec = consequences().get("mcp_tool_call")
    assert spec.effects == ("mcp",) and spec.idempotent is False


# -- payload_types --------------------------------------------------------------------------------------------

def test_payload_types_check_literal_params_at_validate_time(tmp_path):
    path = setup(tmp_path, workflow("""\
        - type: mcp_tool_call
          tool: eightball.shake
          params_type: shake_params@1
          params:
            question: ""
            mood: grumpy
    """))
    code, out = validate(path)
    assert code == 2
    empty = line_of(path, 'question: ""')
    assert re.search(rf":{empty}:\d+: error: .*params.question: `question` must be at "
                     r"least 1 characters long", out), out
    assert re.search(rf":{line_of(path, 'mood: grumpy')}:\d+: error: .*`mood` is not a field of shake_params@1",
                     out), out


def test_payload_types_missing_field_unknown_type_and_bad_descriptor(tmp_path):
    head = HEAD.replace('        context: "string (optional)"\n',
                        '        context: "string (optional)"\n        count: "integr"\n')
    path = setup(tmp_path, workflow("""\
        - type: mcp_tool_call
          tool: eightball.shake
          params_type: shake_params@1
          params: {context: "${computed.question}"}
        - type: mcp_tool_call
          tool: eightball.shake
          params_type: shake_param@1
          params: {question: hi}
    """, head=head))
    code, out = validate(path)
    assert code == 2
    assert "`question` is missing: shake_params@1 requires it" in out
    assert re.search(rf":{line_of(path, 'params_type: shake_param@1')}:\d+: error: .*params_type 'shake_param@1' "
                     r"is not declared in payload_types", out), out
    bad = line_of(path, 'count: "integr"')
    assert re.search(rf":{bad}:\d+: error: payload type shake_params@1, field "
                     r"`count`: 'integr' is not a type", out), out


def test_payload_types_check_interpolated_params_at_run_time(tmp_path):
    path = setup(tmp_path, workflow("""\
        - type: mcp_tool_call
          tool: eightball.shake
          params_type: shake_params@1
          params:
            question: "${computed.question}"
            context: "${computed.count}"
          store_as: computed.answer
    """).replace('computed: {question: "Will it ship?"}', 'computed: {question: "Will it ship?", count: 3}'))
    assert validate(path)[0] == 0
    done, result = run(tmp_path, path)
    assert done.returncode == 1
    error = result["state"]["computed"]["last_error"]
    assert "params.context: `context` must be a string, not a number" in error
    assert "mcp_calls" not in result["state"]  # refused before any server started


def test_payload_types_ok_with_optional_field_given(tmp_path):
    path = setup(tmp_path, workflow("""\
        - type: mcp_tool_call
          tool: eightball.shake
          params_type: shake_params@1
          params: {question: "${computed.question}", context: "calm"}
          store_as: computed.answer
    """))
    assert validate(path)[0] == 0
    done, result = run(tmp_path, path)
    assert done.returncode == 0, done.stderr
    assert result["message"] == "Signs point to yes: Will it ship? (calm)"


# -- declared_effects -----------------------------------------------------------------------------------------

def with_effects(effects: str) -> str:
    return HEAD.replace("    payload_types:", "    declared_effects:\n" + textwrap.indent(textwrap.dedent(effects), "      ")
                        + "    payload_types:")


def test_a_narrowed_tool_list_that_holds_the_tool_runs(tmp_path):
    path = setup(tmp_path, workflow("""\
        - type: mcp_tool_call
          tool: eightball.shake
          params: {question: hi}
          store_as: computed.answer
    """, head=with_effects("eightball: {tools: [shake, lookup]}\nshell: forbidden\n")))
    code, out = validate(path)
    assert code == 0, out
    done, result = run(tmp_path, path)
    assert done.returncode == 0, done.stderr


def test_a_tool_outside_the_declared_tools_is_rejected_at_its_line(tmp_path):
    path = setup(tmp_path, workflow("""\
        - type: mcp_tool_call
          tool: eightball.shake
          params: {question: hi}
        - type: mcp_tool_call
          tool: eightball.lookup
          params: {q: x}
    """, head=with_effects("eightball: {tools: [shake]}\n")))
    code, out = validate(path)
    assert code == 2
    line = line_of(path, "tool: eightball.lookup") - 1  # the step's first line
    assert re.search(rf":{line}:\d+: error: node 'ask', step consequences\[1\] \(mcp_tool_call eightball.lookup\) "
                     r"calls 'lookup', which is not among declared_effects.eightball.tools \(shake\)", out), out
    done, _ = run(tmp_path, path)
    assert done.returncode == 2  # run refuses it as well


def test_a_forbidden_alias_and_an_undeclared_alias_are_rejected(tmp_path):
    path = setup(tmp_path, workflow("""\
        - type: mcp_tool_call
          tool: eightball.shake
          params: {question: hi}
        - type: mcp_tool_call
          tool: crm.search
          params: {q: x}
    """, head=with_effects("eightball: forbidden\nbilling: {tools: [charge]}\n")))
    code, out = validate(path)
    assert code == 2
    assert re.search(rf":{line_of(path, 'tool: eightball.shake') - 1}:\d+: error: node 'ask', step consequences\[0\] "
                     r".* calls the alias 'eightball', which declared_effects forbids", out), out
    assert re.search(rf":{line_of(path, 'tool: crm.search')}:\d+: error: .*the alias 'crm' is not declared in "
                     r"data_mcps", out), out
    assert "declared_effects.billing limits 'billing', which data_mcps does not declare" in out


def test_a_forbidden_effect_rejects_every_step_of_that_effect(tmp_path):
    path = setup(tmp_path, workflow("""\
        - type: set_state
          field: computed.answer
          value: ok
        - type: run_command
          command: [echo, hi]
    """, head=with_effects("shell: forbidden\n")))
    code, out = validate(path)
    assert code == 2
    assert re.search(rf":{line_of(path, 'type: run_command')}:\d+: error: node 'ask', step consequences\[1\] "
                     r"\(run_command\) has the effect 'process', which declared_effects forbids \(`shell: forbidden`\)",
                     out), out
    assert "set_state" not in out
    path.write_text(path.read_text().replace("shell: forbidden", "network: forbidden"))
    assert validate(path)[0] == 0


def test_max_call_count_zero_is_rejected_and_a_count_is_enforced_while_running(tmp_path):
    zero = setup(tmp_path, workflow("""\
        - type: mcp_tool_call
          tool: eightball.shake
          params: {question: hi}
    """, head=with_effects("eightball: {max_call_count: 0}\n")))
    code, out = validate(zero)
    assert code == 2 and "max_call_count is 0" in out
    path = setup(tmp_path, workflow("""\
        - type: mcp_tool_call
          tool: eightball.shake
          params: {question: first}
          store_as: computed.answer
        - type: mcp_tool_call
          tool: eightball.shake
          params: {question: second}
          store_as: computed.second
    """, head=with_effects("eightball: {tools: [shake], max_call_count: 1}\n")))
    assert validate(path)[0] == 0
    done, result = run(tmp_path, path)
    assert done.returncode == 1
    assert result["state"]["computed"]["answer"] == "Signs point to yes: first"
    assert "second" not in result["state"]["computed"]
    assert "this would be call 2 to 'eightball' in this run; declared_effects.eightball.max_call_count allows 1" \
        in result["state"]["computed"]["last_error"]


# What npm's own `semver` package (7.8.6, installed from the npm registry into a scratch prefix) answers for each
# (version, range): `node -e 'require("semver").satisfies(v, r)'`. The hand-written check this replaced gave
# four of these wrong (1.0.0-beta ^1, 1.2.3 >1.2, 1.2.9 <=1.2, a hyphen range).
NPM_ANSWERS = [
    ('1.4.0', '^1', True),
    ('2.0.0', '^1', False),
    ('2.1.5', '^2.1', True),
    ('2.0.9', '^2.1', False),
    ('0.2.3', '^0.2', True),
    ('0.3.0', '^0.2', False),
    ('3.2.9', '~3.2', True),
    ('3.3.0', '~3.2', False),
    ('3.9.0', '~3', True),
    ('1.5.0', '>=1.2 <2', True),
    ('2.0.0', '>=1.2 <2', False),
    ('5.0.0', '^1 || ^5', True),
    ('1.2.3', '1.2.3', True),
    ('1.2.4', '1.2', True),
    ('9.9.9', '*', True),
    ('1.0.0-beta', '^1', False),
    ('1.2.3', '>1.2', False),
    ('1.3.0', '>1.2', True),
    ('1.2.9', '<=1.2', True),
    ('1.3.0', '<=1.2', False),
    ('1.0.0-beta', '^1.0.0-alpha', True),
    ('1.0.0-rc.1', '>=1.0.0-beta', True),
    ('1.2.3', '1.2.x', True),
    ('1.3.0', '1.2.x', False),
    ('0.0.3', '^0.0.3', True),
    ('0.0.4', '^0.0.3', False),
    ('1.2.3', '1.2.0 - 1.3.0', True),
    ('1.3.1', '1.2.0 - 1.3.0', False),
    ('v2.0.0', '^2', True),
    ('1.2.3', '>=1.2.3 <1.2.4', True),
    ('2.0.0', '~1', False),
    ('1.9.9', '~1', True),
    ('1.2.3-alpha', '1.2.3-alpha', True),
    ('1.2.3', '=1.2.3', True),
]


@pytest.mark.parametrize("version, wanted, npm", NPM_ANSWERS)
def test_version_ranges_are_decided_as_npm_decides_them(version, wanted, npm):
    from wfexec.types.consequences.mcp import version_in_range

    assert version_in_range(version, wanted) is npm


def test_version_ranges_read_short_versions_commas_and_refuse_what_is_unreadable():
    from wfexec.types.consequences.mcp import version_in_range

    assert version_in_range("2.1", "^2") is True and version_in_range("3", "^2") is False
    assert version_in_range("2.0.0", ">=1.2, <2") is False and version_in_range("1.9.0", ">=1.2, <2") is True
    assert version_in_range("nightly", "^1") is None
    assert version_in_range("1.0.0", "not a range!") is None


def test_payload_fields_written_as_mappings_with_defaults():
    from wfexec.language.payloads import parse_type

    shape, problems = parse_type("search@2", {
        "q": {"type": "string", "min_length": 2, "pattern": "^[a-z]+$"},
        "limit": {"type": "integer", "required": False, "default": 10, "min": 1, "max": 50},
        "tags": {"type": "array<string>", "max_length": 2, "required": False},
        "mode": "enum{fast, exact}",
        "wrong": {"type": "integer", "pattern": "x"}})
    assert problems == [("wrong", "`pattern` applies to strings, not to integer")]
    assert shape.check({"q": "abc", "mode": "fast"}) == []
    assert shape.with_defaults({"q": "abc"}) == {"q": "abc", "limit": 10}
    assert [field for field, _ in shape.check({"q": "A1", "limit": 99, "tags": ["a", "b", "c"], "mode": "slow"})] \
        == ["q", "limit", "tags", "mode"]
    assert shape.check({"q": "abc", "limit": True, "mode": "fast"})[0][1].startswith("`limit` must be an integer")


# -- a hostile server (issue 24) ------------------------------------------------------------------------------

HOSTILE = r'''
import json, subprocess, sys

mode = sys.argv[1]


def reply(ident, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if method == "initialize":
        if mode == "huge-handshake":  # one line that never ends
            sys.stdout.write('{"jsonrpc": "2.0", "id": %d, "result": {"serverInfo": {"name": "' % ident)
            for _ in range(50):
                sys.stdout.write("x" * 1_000_000)
            sys.stdout.flush()
            sys.stdin.read()
        if mode == "chatty":  # 50 MB on stderr before it answers: only its end is kept
            for _ in range(50):
                sys.stderr.write(("noise " * 170_000)[:999_999] + "\n")
            sys.stderr.write("the last words\n")
            sys.stderr.flush()
        if mode == "setsid":  # a child in a session of its own: no group kill reaches it
            subprocess.Popen(["sh", "-c", "echo $$ > child.pid; exec sleep 300"], start_new_session=True)
        reply(ident, {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "hostile", "version": "1.0.0"}})
    elif method == "tools/list":
        reply(ident, {"tools": [{"name": "dump", "inputSchema": {"type": "object"}}]})
    elif method == "tools/call":
        text = "x" * 50_000_000 if mode == "huge-result" else "ok"
        reply(ident, {"content": [{"type": "text", "text": text}], "isError": False})
'''

HOSTILE_HEAD = """\
    name: v8-hostile
    version: "1.0.0"
    data_mcps:
      evil: "hostile@^1"
    start_node: ask
    default_error: failed
"""

# The peak memory of the `wfexec run` it starts (and what that waited for), in MB: RUSAGE_CHILDREN of a process
# that starts nothing else.
MEASURED = """\
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
"""


def hostile(tmp_path, mode: str):
    (tmp_path / "hostile.py").write_text(HOSTILE)
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"hostile": {
        "command": sys.executable, "args": ["${CLAUDE_PLUGIN_ROOT}/hostile.py", mode]}}}))
    path = tmp_path / "workflow.yaml"
    path.write_text(textwrap.dedent(workflow("""\
        - type: mcp_tool_call
          tool: evil.dump
          store_as: computed.answer
    """, head=HOSTILE_HEAD)))
    return path


@pytest.mark.parametrize("mode", ["huge-handshake", "huge-result"])
def test_a_servers_huge_message_ends_the_step_at_the_limit_without_the_memory(tmp_path, mode):
    """A 50 MB handshake line or tool result once drove the run to 586–935 MB."""
    import subprocess

    path = hostile(tmp_path, mode)
    done, result = run(tmp_path, path)
    assert done.returncode == 1 and result["ending"] == "failed", done.stderr
    error = result["state"]["computed"]["last_error"]
    assert "evil.dump" in error and "more than 8,388,608 bytes, the most one may have" in error, error
    measured = subprocess.run([sys.executable, "-c", MEASURED, sys.executable, "-m", "wfexec", "run", str(path),
                               "--store", str(tmp_path / "measured.db")], cwd=tmp_path, capture_output=True,
                              text=True, timeout=300)
    assert int(measured.stdout) < 250, f"{measured.stdout.strip()} MB"


def test_a_child_the_server_moved_to_its_own_session_ends_with_the_call(tmp_path):
    import os

    path = hostile(tmp_path, "setsid")
    done, result = run(tmp_path, path)
    assert done.returncode == 0 and result["state"]["computed"]["answer"] == "ok", done.stderr
    pid = int((tmp_path / "child.pid").read_text())
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return
    with open(f"/proc/{pid}/stat") as stat:
        assert stat.read().split(")")[-1].split()[0] == "Z", f"the server's child {pid} outlived the call"


def test_a_servers_stderr_is_kept_only_at_its_end(tmp_path):
    """A server that writes 50 MB to stderr still answers, and the run does not hold what it wrote: only the end
    of a server's stderr is ever quoted, so only that is kept (it once went whole to a temporary file)."""
    import subprocess

    path = hostile(tmp_path, "chatty")
    done, result = run(tmp_path, path)
    assert done.returncode == 0 and result["state"]["computed"]["answer"] == "ok", done.stderr
    measured = subprocess.run([sys.executable, "-c", MEASURED, sys.executable, "-m", "wfexec", "run", str(path),
                               "--store", str(tmp_path / "measured.db")], cwd=tmp_path, capture_output=True,
                              text=True, timeout=300)
    assert int(measured.stdout) < 250, f"{measured.stdout.strip()} MB"


def test_the_last_lines_of_a_servers_stderr_are_what_is_kept():
    from wfexec.types.consequences.mcp import STDERR_KEPT, _stderr_tail, _StderrTail

    tail = _StderrTail()
    for index in range(100_000):
        tail.add(f"line {index}\n".encode())
    assert len(tail.data) <= STDERR_KEPT
    assert _stderr_tail(tail).splitlines()[-1] == "line 99999"


def test_payload_values_are_checked_by_jsonschema_with_this_modules_words():
    import jsonschema

    from wfexec.language.payloads import parse_type

    shape, problems = parse_type("t@1", {"n": "array<integer> (max_length=3)", "i": "integer (min=2)",
                                         "on": "boolean", "mode": "enum{1, 2}"})
    assert problems == []
    for spec in shape.fields.values():
        jsonschema.Draft202012Validator.check_schema(spec.schema())
    assert dict(shape.check({"n": [1, 2 ** 64], "i": 2 ** 64, "on": 1, "mode": True})) == {
        "n": "`n` item 1 is outside the 64-bit integer range (t@1 declares it `array<integer> (max_length=3)`)",
        "i": "`i` is outside the 64-bit integer range (t@1 declares it `integer (min=2)`)",
        "on": "`on` must be true or false, not a number (t@1 declares it `boolean`)",
        "mode": "`mode` is True, not one of 1, 2 (t@1 declares it `enum{1, 2}`)"}  # true is not 1, as in JSON
    assert dict(shape.check({"n": [1, 2, 3, 4], "i": 1.0, "on": True, "mode": "1"})) == {
        "n": "`n` must have at most 3 items (it has 4) (t@1 declares it `array<integer> (max_length=3)`)",
        "i": "`i` must be at least 2 (it is 1.0) (t@1 declares it `integer (min=2)`)"}
