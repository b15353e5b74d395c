"""A node type added by one file of a plugin package: validated, run, parked and resumed, drawn, documented.

`tests/plugins/wfexec-countdown` holds one module, `wfexec_countdown.py`, and registers its `NODE_TYPE` in
the entry-point group `wfexec.nodes`; it is installed for real with pip, and every check goes through the
`wfexec` command in a subprocess that sees it.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing

import pytest

from conftest import ROOT, install_plugin, wfexec_cli, with_plugins

PLUGIN = ROOT / "tests" / "plugins" / "wfexec-countdown"

WORKFLOW = """
name: launch
version: 1
start_node: count
nodes:
  count:
    type: countdown
    from: 3
    store_as: computed.left
    confirm: "Launch now?"
    on_tick: count
    on_zero: report
    on_stop: scrubbed
  report:
    type: action
    actions:
      - {type: set_state, field: computed.ticks, value: "${len(history)}"}
    on_success: launched
endings:
  launched: {type: success, message: "launched after ${computed.ticks} steps"}
  scrubbed: {type: cancelled, message: "scrubbed at ${computed.left}"}
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return install_plugin(PLUGIN, tmp_path_factory.mktemp("site"))


def wfexec(site, *args, cwd):
    return wfexec_cli(*args, cwd=cwd, env=with_plugins(site))


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "workflow.yaml").write_text(WORKFLOW, encoding="utf-8")
    return tmp_path


def test_the_node_type_runs_its_loop(site, folder):
    done = wfexec(site, "run", ".", "--answer", "count=go", "--format", "json", cwd=folder)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["message"] == "launched after 4 steps"
    assert [(h["node"], h["outcome"].get("left")) for h in result["state"]["history"]] == \
        [("count", 3), ("count", 2), ("count", 1), ("count", 0), ("report", None)]
    assert result["state"]["history"][-2]["target"] == "report"


def test_the_node_type_parks_on_its_question_and_resumes_from_the_store(site, folder):
    store = folder / "runs.db"
    parked = wfexec(site, "run", ".", "--store", store, cwd=folder)
    assert parked.returncode == 3, parked.stderr
    with closing(sqlite3.connect(store)) as db:
        [(run_id, status, node)] = db.execute("SELECT id, status, current_node FROM runs").fetchall()
    assert (status, node) == ("waiting", "count")
    assert "Launch now?" in parked.stderr

    # A new process: the plugin's node type is looked up again, the run goes on from its last step.
    resumed = wfexec(site, "resume", run_id, "--store", store, "--answer", "count=stop", "--format", "json",
                     cwd=folder)
    assert resumed.returncode == 1, resumed.stderr
    result = json.loads(resumed.stdout)
    assert (result["ending"], result["message"]) == ("scrubbed", "scrubbed at 0")
    assert [(h["node"], h["outcome"]["left"], h["target"]) for h in result["state"]["history"]] == \
        [("count", 3, "count"), ("count", 2, "count"), ("count", 1, "count"), ("count", 0, "scrubbed")]


LOGGED = """
name: logged
version: 1
start_node: count
nodes:
  count:
    type: countdown
    from: 2
    store_as: computed.left
    log: ticks.log
    on_tick: count
    on_zero: done
endings:
  done: {type: success, message: "done"}
"""


def test_a_run_killed_inside_the_node_type_resumes_as_its_declared_effects_say(site, tmp_path):
    """The node type declares that logging touches files and is not safe twice: the journal marks the step in
    flight before it runs, and resume asks before running it again."""
    (tmp_path / "workflow.yaml").write_text(LOGGED, encoding="utf-8")
    store = tmp_path / "runs.db"
    # Opening a FIFO to write blocks until someone reads it: the first visit hangs inside the node.
    os.mkfifo(tmp_path / "ticks.log")
    process = subprocess.Popen([sys.executable, "-m", "wfexec", "run", ".", "--store", str(store)],
                               cwd=tmp_path, env={**os.environ, **with_plugins(site)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60  # a guard against a hang, not a measurement
        in_flight = None
        while in_flight is None and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
            try:
                with closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True)) as db:
                    row = db.execute("SELECT id, in_flight FROM runs").fetchone()
            except sqlite3.OperationalError:  # not created yet, or its tables are being made
                continue
            in_flight = row and row[1] and (row[0], json.loads(row[1]))
        assert in_flight, "the countdown step was never marked in flight"
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait()
    run_id, marked = in_flight
    assert marked["node"] == "count"

    asked = wfexec(site, "resume", run_id, "--store", store, cwd=tmp_path)
    assert asked.returncode == 3, asked.stderr
    assert f"node 'count' was running when run {run_id} stopped, and it is not safe to run twice" in asked.stderr
    skipped = wfexec(site, "resume", run_id, "--store", store, "--skip", cwd=tmp_path)
    assert skipped.returncode == 2
    assert "a countdown node cannot be skipped" in skipped.stderr

    (tmp_path / "ticks.log").unlink()
    rerun = wfexec(site, "resume", run_id, "--store", store, "--rerun", "--format", "json", cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    assert (tmp_path / "ticks.log").read_text(encoding="utf-8") == "left=2\nleft=1\nleft=0\n"
    history = json.loads(rerun.stdout)["state"]["history"]
    assert [(h["node"], h["outcome"]["left"]) for h in history] == [("count", 2), ("count", 1), ("count", 0)]


def test_validation_uses_the_node_types_schema_edges_and_checks(site, folder):
    (folder / "workflow.yaml").write_text(WORKFLOW.replace("from: 3", "from: many"), encoding="utf-8")
    done = wfexec(site, "validate", ".", cwd=folder)
    assert done.returncode == 2
    assert "workflow.yaml:8:11: error: `from` in countdown node 'count' must be a whole number, not a string" \
        in done.stdout

    (folder / "workflow.yaml").write_text(WORKFLOW.replace("on_zero: report", "on_zero: reprot"), encoding="utf-8")
    done = wfexec(site, "validate", ".", cwd=folder)
    assert done.returncode == 2
    assert "`on_zero` names 'reprot', which is neither a node nor an ending — did you mean 'report'?" \
        in done.stdout

    # Its own compile-time check, with the position of the field.
    (folder / "workflow.yaml").write_text(WORKFLOW.replace("    on_stop: scrubbed\n", ""), encoding="utf-8")
    done = wfexec(site, "validate", ".", cwd=folder)
    assert done.returncode == 2
    assert "workflow.yaml:10:14: error: countdown 'count' asks `confirm` but has no `on_stop`" in done.stdout

    # Reachability follows its edges: `scrubbed` is reached only through on_stop, `orphan` through nothing.
    orphaned = WORKFLOW.replace("endings:\n", "  orphan:\n    type: action\n    actions: []\n"
                                              "    on_success: launched\nendings:\n")
    (folder / "workflow.yaml").write_text(orphaned, encoding="utf-8")
    done = wfexec(site, "validate", ".", cwd=folder)
    assert done.returncode == 0, done.stdout
    assert "node 'orphan' cannot be reached from start_node 'count'" in done.stdout
    assert "scrubbed" not in done.stdout


def test_the_node_type_is_drawn_with_its_shape_and_edges(site, folder):
    mermaid = wfexec(site, "graph", ".", cwd=folder)
    assert mermaid.returncode == 0, mermaid.stderr
    lines = mermaid.stdout.splitlines()
    assert '    count[\\"count"/]' in lines
    assert any("count" in line and "on_tick" in line and "count" in line.split("|")[-1] for line in lines)
    assert any("on_stop" in line and "scrubbed" in line for line in lines)
    dot = wfexec(site, "graph", ".", "--format", "dot", cwd=folder)
    assert '"count" [shape=trapezium, label="count", tooltip="countdown"];' in dot.stdout


def test_the_node_type_is_documented_and_in_the_published_schema(site, folder):
    out = folder / "lib"
    done = wfexec(site, "docs", "--plugins", "--output", out, cwd=folder)
    assert done.returncode == 0, done.stderr
    schema_md = (out / "workflow" / "schema.md").read_text(encoding="utf-8")
    section = schema_md[schema_md.index("### `countdown`"):].split("\n## ")[0]
    assert "Count a state value down by one per visit" in section
    assert "| `from` | integer | yes | where the count starts |" in section
    assert "| `on_stop` | target |  | where to go when the answer to `confirm` is `stop` |" in section
    execution = (out / "workflow" / "execution.md").read_text(encoding="utf-8")
    assert "### `countdown`\n\n1. When `store_as` holds no number, set it to `from`" in execution

    # Without --plugins the reference is wfexec's own, as lib/ holds it.
    plain = wfexec(site, "docs", "--output", folder / "plain", cwd=folder)
    assert plain.returncode == 0, plain.stderr
    assert "countdown" not in (folder / "plain" / "workflow" / "schema.md").read_text(encoding="utf-8")

    schema = json.loads(wfexec(site, "schema", cwd=folder).stdout)
    assert "countdown" in schema["$defs"]["node"]["properties"]["type"]["enum"]
    countdown = schema["$defs"]["node.countdown"]
    assert countdown["required"] == ["type", "from", "store_as", "on_tick", "on_zero"]
    assert countdown["properties"]["on_tick"]["$ref"] == "#/$defs/target"
    assert countdown["properties"]["on_tick"]["description"]  # its field note, shown by editors


def test_a_skill_carries_the_node_types_rules_shape_and_tools(site, tmp_path):
    folder = tmp_path / "launch"
    folder.mkdir()
    (folder / "workflow.yaml").write_text(WORKFLOW.replace("version: 1\n", "version: 1\ndescription: Count down.\n"),
                                          encoding="utf-8")
    done = wfexec(site, "skill", folder, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    skill = (folder / "SKILL.md").read_text(encoding="utf-8")
    assert "allowed-tools: Bash(wfexec:*) Read AskUserQuestion" in skill
    by_hand = (folder / "without-wfexec.md").read_text(encoding="utf-8")
    assert "### `countdown`\n\n1. When `store_as` holds no number, set it to `from`" in by_hand
    assert "cylinder `states`, trapezoid `countdown`, rounded box an ending" in " ".join(by_hand.split())


def test_without_the_plugin_the_node_type_is_unknown(folder):
    done = wfexec_cli("validate", ".", cwd=folder)
    assert done.returncode == 2
    assert "node 'count' has unknown type 'countdown'" in done.stdout


def test_a_node_type_plugin_that_cannot_load_is_named_where_its_type_is_unknown(folder, tmp_path):
    site = tmp_path / "broken-site"
    dist = site / "wfexec_broken-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: wfexec-broken\nVersion: 0.1\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text("[wfexec.nodes]\ncountdown = wfexec_missing:NODE_TYPE\n", encoding="utf-8")
    done = wfexec(site, "validate", ".", cwd=folder)
    assert done.returncode == 2
    assert "node 'count' has unknown type 'countdown'" in done.stdout
    assert "node type plugin 'countdown' (wfexec_missing:NODE_TYPE) could not be loaded: No module named " \
           "'wfexec_missing'" in done.stdout
    # The built-in node types still load.
    assert "unknown type 'action'" not in done.stdout


OLD_SHAPE = '''
from wfexec.nodes import TARGET, NodeType, Outcome

def compile(node_id, raw, c):
    return c.target(raw.get("on_tick"), ("on_tick",))

NODE_TYPE = NodeType(
    name="countdown", schema={"properties": {"on_tick": TARGET}}, compile=compile,
    execute=lambda node, run: Outcome(node.spec), targets=lambda spec: [("on_tick", spec)],
    doc="`countdown`: the shape before the split.", rules="1. Count.", mermaid_shape=("[", "]"),
)
'''

REACHING = '''
from wfexec.nodes import TARGET, NodeType, Outcome

def execute(node, run):
    run.budget[0] += 1  # what a node type could do to the engine's run before it got a NodeContext
    return Outcome(node.spec)

NODE_TYPE = NodeType(
    name="countdown", schema={"properties": {"on_tick": TARGET}},
    compile=lambda node_id, raw, c: c.target(raw.get("on_tick"), ("on_tick",)),
    execute=execute, targets=lambda spec: [("on_tick", spec)],
)
'''

MINIMAL = """
name: minimal
version: 1
start_node: count
nodes:
  count: {type: countdown, on_tick: done}
endings:
  done: {type: success, message: "done"}
"""


def _site_with(tmp_path, module: str, source: str):
    """A plugin installed as pip would leave it: its module and a dist-info naming its entry point."""
    site = tmp_path / f"{module}-site"
    dist = site / f"{module}-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text(f"[wfexec.nodes]\ncountdown = {module}:NODE_TYPE\n", encoding="utf-8")
    (site / f"{module}.py").write_text(source, encoding="utf-8")
    return site


def test_a_node_type_declared_in_the_old_shape_is_refused_saying_where_each_field_went(tmp_path):
    site = _site_with(tmp_path, "wfexec_oldshape", OLD_SHAPE)
    (tmp_path / "workflow.yaml").write_text(MINIMAL, encoding="utf-8")
    done = wfexec(site, "validate", ".", cwd=tmp_path)
    assert done.returncode == 2
    assert "node 'count' has unknown type 'countdown'" in done.stdout
    told = " ".join(done.stdout.split())
    assert "node type plugin 'countdown' (wfexec_oldshape:NODE_TYPE) could not be loaded: NodeType 'countdown' is " \
           "declared in the old shape: `doc`, `rules`, `mermaid_shape` are no longer fields of NodeType. Write " \
           "docs=Docs(doc=…, rules=…); drawing=Drawing(mermaid_shape=…)" in told
    assert "execute(node, ctx) now gets a NodeContext, not the run. See docs/guide/plugins.md" in told


def test_a_node_type_that_reaches_into_the_run_is_told_it_gets_a_node_context(tmp_path):
    site = _site_with(tmp_path, "wfexec_reaching", REACHING)
    (tmp_path / "workflow.yaml").write_text(MINIMAL, encoding="utf-8")
    done = wfexec(site, "run", ".", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    told = " ".join(done.stderr.split())
    assert "a node type's execute gets a NodeContext, not the run: it has no `budget`" in told
    assert "workflow.yaml:6:10: error: node 'count'" in told  # at the node
