"""`wfexec skill`: SKILL.md generated from workflow.yaml, through the real command.

Every committed skills/*/SKILL.md must be current and pass the Agent Skills
reference validator (skills-ref); generated files are byte-identical run to run;
hand-written `wfexec:keep` blocks survive regeneration; `--check` says stale
with exit code 1.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import skills_ref
import yaml

from conftest import ROOT, wfexec_cli

SKILLS = ROOT / "skills"
SKILL_DIRS = sorted(path.parent for path in SKILLS.glob("*/workflow.yaml"))
SKILL_IDS = [path.name for path in SKILL_DIRS]

KEEP_OPEN, KEEP_CLOSE = "<!-- wfexec:keep -->", "<!-- /wfexec:keep -->"

BASIC = """
name: {name}
version: "2.0"
description: >-
  Says hello: a question, an action and two endings.
  Use when testing skills.
start_node: ask
initial_state:
  who: world
  flags: {{polite: false}}
nodes:
  ask:
    type: user_prompt
    prompt:
      question: "Greet ${{who}}?"
      header: Greet
      options:
        - {{id: yes_please, label: "Yes, please"}}
        - {{id: decline, label: "No"}}
    on_response:
      yes_please: {{next_node: greet}}
      decline: {{next_node: declined}}
  greet:
    type: action
    actions:
      - {{type: set_state, field: computed.greeting, value: "Hello, ${{who}}"}}
    on_success: done
    on_failure: failed
endings:
  done: {{type: success, message: "${{computed.greeting}}", summary: {{who: "${{who}}"}}}}
  declined: {{type: cancelled, message: Not greeted.}}
  failed: {{type: error, message: "${{computed.last_error}}", recovery: {{suggestion: Try again, retry_node: ask}}}}
"""


def make_skill(root: Path, name: str = "hello", text: str = BASIC, **values) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "workflow.yaml").write_text(textwrap.dedent(text).format(name=values.get("workflow_name", name)),
                                          encoding="utf-8")
    return folder


def generate(cli, folder: Path, *flags) -> subprocess.CompletedProcess:
    done = cli("skill", *flags, folder)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def frontmatter(text: str) -> dict:
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n", 2)[1])


def section(text: str, heading: str) -> str:
    """The text under `heading` up to the next heading of the same or a higher level."""
    level = len(heading) - len(heading.lstrip("#"))
    start = text.index(heading + "\n")
    rest = text[start + len(heading) + 1:]
    match = re.search(rf"^#{{1,{level}}} ", rest, flags=re.M)
    return rest[: match.start()] if match else rest


# -- the committed example skills -------------------------------------------------

@pytest.mark.parametrize("folder", SKILL_DIRS, ids=SKILL_IDS)
def test_committed_skill_md_is_current(cli, folder):
    done = generate(cli, folder, "--check")
    assert done.returncode == 0, (f"{folder.name}/SKILL.md is stale; regenerate it with "
                                  f"`wfexec skill skills/{folder.name}`\n{done.stdout}{done.stderr}")


@pytest.mark.parametrize("folder", SKILL_DIRS, ids=SKILL_IDS)
def test_committed_skill_md_passes_the_agent_skills_validator(folder):
    assert skills_ref.validate(folder) == []
    properties = skills_ref.read_properties(folder)
    assert properties.name == folder.name
    assert properties.allowed_tools and "Read" in properties.allowed_tools.split()


@pytest.mark.parametrize("folder", SKILL_DIRS, ids=SKILL_IDS)
def test_committed_skill_md_is_short_and_links_nothing_outside_its_folder(folder):
    """A skill is copied and installed on its own: nothing it points at may lie outside its folder. SKILL.md,
    loaded whenever the skill triggers, stays small; the by-hand rules are in without-wfexec.md beside it."""
    text = (folder / "SKILL.md").read_text(encoding="utf-8")
    assert len(text.encode()) < 4000
    assert "`without-wfexec.md`" in text and (folder / "without-wfexec.md").is_file()
    for name in ("SKILL.md", "without-wfexec.md"):
        written = (folder / name).read_text(encoding="utf-8")
        assert "../" not in written and "$SKILL_DIR" not in written
        for link in re.findall(r"\]\(([^)#]+)\)", written):
            assert not os.path.isabs(link) and (folder / link).resolve().is_relative_to(folder.resolve()), link


def test_release_checklist_tools_follow_what_the_workflow_does():
    tools = skills_ref.read_properties(SKILLS / "release-checklist").allowed_tools.split()
    # run_command and git → Bash; write_file → Write; the confirm question → AskUserQuestion.
    assert tools == ["Bash", "Read", "Write", "AskUserQuestion"]


def test_the_generated_run_instructions_work_as_written(cli, tmp_path):
    """Follow quickstart's SKILL.md like an agent: run, see the question (exit 3), resume with the answer."""
    text = (SKILLS / "quickstart" / "SKILL.md").read_text(encoding="utf-8")
    run_line = re.search(r"^wfexec run .*$", text, flags=re.M).group(0)
    resume_line = re.search(r"^wfexec resume .*$", text, flags=re.M).group(0)
    # Claude Code sets CLAUDE_SKILL_DIR; the store is in the (here private) home folder.
    env = dict(os.environ, CLAUDE_SKILL_DIR=str(SKILLS / "quickstart"), HOME=str(tmp_path / "home"))
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")

    def bash(command: str):
        return subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=60)

    first = bash(run_line)
    assert first.returncode == 3, first.stderr
    waiting = json.loads(first.stdout)
    assert (waiting["status"], waiting["node"]) == ("waiting", "ask_mood")
    resume = (resume_line.replace("<run_id>", waiting["run_id"]).replace("<answer_key>", waiting["answer_key"])
              .replace("<option id>", waiting["options"][0]["id"]))
    elsewhere = tmp_path / "another-folder"
    elsewhere.mkdir()
    second = subprocess.run(["bash", "-c", resume], cwd=elsewhere, env=env, capture_output=True, text=True,
                            timeout=60)  # resumed from another folder: the store is the user's
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["message"] == "Hello, world!"
    assert (tmp_path / "home" / ".local" / "state" / "wfexec" / "runs.db").is_file()


# -- frontmatter ---------------------------------------------------------------------

def test_frontmatter_name_description_and_tools(cli, tmp_path):
    folder = make_skill(tmp_path)
    done = generate(cli, folder)
    assert done.returncode == 0, done.stderr
    text = (folder / "SKILL.md").read_text(encoding="utf-8")
    meta = frontmatter(text)
    assert meta["name"] == "hello"
    assert meta["description"] == "Says hello: a question, an action and two endings. Use when testing skills."
    assert meta["allowed-tools"] == "Bash(wfexec:*) Read AskUserQuestion"
    assert skills_ref.validate(folder) == []
    assert skills_ref.read_properties(folder).description == meta["description"]


@pytest.mark.parametrize("actions,expected", [
    ([], "Bash(wfexec:*) Read"),
    ([{"type": "run_command", "command": ["true"]}], "Bash Read"),
    ([{"type": "get_sha", "repo_path": ".", "store_as": "computed.sha"}], "Bash Read"),
    ([{"type": "write_file", "path": "x.txt", "content": "x"}], "Bash(wfexec:*) Read Write"),
    ([{"type": "web_fetch", "url": "http://127.0.0.1:1/", "store_as": "computed.page"}],
     "Bash(wfexec:*) Read WebFetch"),
    ([{"type": "spawn_agent", "subagent_type": "general-purpose", "prompt": "hi", "store_as": "computed.reply"}],
     "Bash(wfexec:*) Read Task"),
], ids=["state-only", "process", "git", "files", "network", "llm"])
def test_allowed_tools_come_from_the_effects(cli, tmp_path, actions, expected):
    doc = {"name": "tools", "version": 1, "description": "Checks tools.", "start_node": "act",
           "nodes": {"act": {"type": "action", "actions": actions + [{"type": "set_flag", "flag": "x"}],
                             "on_success": "done", "on_failure": "done"}},
           "endings": {"done": {"type": "success", "message": "ok"}}}
    folder = tmp_path / "tools"
    folder.mkdir()
    (folder / "workflow.yaml").write_text(json.dumps(doc), encoding="utf-8")
    assert generate(cli, folder).returncode == 0
    assert frontmatter((folder / "SKILL.md").read_text(encoding="utf-8"))["allowed-tools"] == expected


def test_a_sub_workflows_effects_count_too(cli, tmp_path):
    folder = tmp_path / "outer"
    folder.mkdir()
    (folder / "inner.yaml").write_text(json.dumps({
        "name": "inner", "version": 1, "start_node": "act",
        "nodes": {"act": {"type": "action", "actions": [{"type": "run_command", "command": ["true"]}],
                          "on_success": "done", "on_failure": "done"}},
        "endings": {"done": {"type": "success", "message": "ok"}}}), encoding="utf-8")
    (folder / "workflow.yaml").write_text(json.dumps({
        "name": "outer", "version": 1, "description": "Calls inner.", "start_node": "call",
        "nodes": {"call": {"type": "reference", "workflow": "inner.yaml", "on_success": "done",
                           "on_failure": "done"}},
        "endings": {"done": {"type": "success", "message": "ok"}}}), encoding="utf-8")
    assert generate(cli, folder).returncode == 0
    text = (folder / "SKILL.md").read_text(encoding="utf-8")
    assert frontmatter(text)["allowed-tools"] == "Bash Read"
    fallback = (folder / "without-wfexec.md").read_text(encoding="utf-8")
    assert "`call` runs `inner.yaml`" in fallback
    assert "### `action`" in fallback  # the sub-workflow's node types are explained too


def test_awkward_descriptions_survive_the_frontmatter(cli, tmp_path):
    awkward = "Says \"hello\" --- twice: # not a comment, {braces}, [brackets], 'quotes', back\\slash and é."
    doc = yaml.safe_load(textwrap.dedent(BASIC).format(name="hello"))
    doc["description"] = awkward
    folder = tmp_path / "hello"
    folder.mkdir()
    (folder / "workflow.yaml").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    assert generate(cli, folder).returncode == 0
    assert skills_ref.validate(folder) == []
    assert skills_ref.read_properties(folder).description == awkward
    assert frontmatter((folder / "SKILL.md").read_text(encoding="utf-8"))["description"] == awkward


@pytest.mark.parametrize("folder_name,workflow_name,message", [
    ("Hello_World", "Hello_World", "folder's name 'Hello_World'"),
    ("-hello", "-hello", "folder's name '-hello'"),
    ("a" * 65, "a" * 65, "65 characters"),
    ("hello", "greeter", "'greeter' differs from its skill folder 'hello'"),
])
def test_names_that_do_not_fit_are_refused(cli, tmp_path, folder_name, workflow_name, message):
    folder = make_skill(tmp_path, folder_name, workflow_name=workflow_name)
    done = generate(cli, folder)
    assert done.returncode == 2
    assert message in done.stderr
    assert not (folder / "SKILL.md").exists()


def test_a_description_is_required_and_limited(cli, tmp_path):
    missing = make_skill(tmp_path, "missing", text=re.sub(r"description: >-\n.*\n.*\n", "", BASIC))
    done = generate(cli, missing)
    assert done.returncode == 2 and "has no description" in done.stderr
    long = make_skill(tmp_path, "long", text=BASIC.replace("Use when testing skills.", "word " * 210))
    done = generate(cli, long)
    assert done.returncode == 2 and "at most 1024" in done.stderr


def test_an_invalid_workflow_is_reported_not_generated(cli, tmp_path):
    folder = make_skill(tmp_path, text=BASIC.replace("on_success: done", "on_success: nowhere"))
    done = generate(cli, folder)
    assert done.returncode == 2
    assert "workflow.yaml:" in done.stderr and "nowhere" in done.stderr
    assert not (folder / "SKILL.md").exists()


def test_a_folder_without_workflow_is_refused(cli, tmp_path):
    done = generate(cli, tmp_path)
    assert done.returncode == 2 and "has no workflow.yaml" in done.stderr


# -- body -----------------------------------------------------------------------------

def test_body_tells_how_to_run_answer_and_read_the_result(cli, tmp_path):
    folder = make_skill(tmp_path)
    generate(cli, folder)
    text = (folder / "SKILL.md").read_text(encoding="utf-8")
    run = section(text, "## Run it")
    assert "pip install 'wfexec[mcp]'" in run and '`{"path": "${CLAUDE_SKILL_DIR}"}`' in run
    assert 'wfexec run "${CLAUDE_SKILL_DIR}" --non-interactive --format json --store' in run
    questions = section(text, "## Questions")
    assert "| `ask` | Greet ${who}? | `yes_please` (Yes, please), `decline` (No) |" in questions
    assert "wfexec resume <run_id> --answer <answer_key>=<option id>" in questions
    assert "`answer` tool" in questions
    assert "`message`" in section(text, "## The result")


def test_required_inputs_appear_in_the_command(cli):
    text = (SKILLS / "release-checklist" / "SKILL.md").read_text(encoding="utf-8")
    assert re.search(r'^wfexec run "\$\{CLAUDE_SKILL_DIR\}" .*--input "version=<version>"$', text, flags=re.M)
    assert '"inputs": {"version": …}' in text
    assert '--input "repo=' not in text  # it has a default
    assert "| `version` | string | yes |" in text


def test_fallback_holds_this_workflows_start_state_endings_and_graph(cli, tmp_path):
    import wfexec
    from wfexec.outputs.graph import to_mermaid

    folder = make_skill(tmp_path)
    generate(cli, folder)
    fallback = (folder / "without-wfexec.md").read_text(encoding="utf-8")
    state_block = re.search(r"```yaml\n(.*?)```", section(fallback, "## 1. Start"), flags=re.S).group(1)
    assert yaml.safe_load(state_block) == {"flags": {"polite": False}, "computed": {}, "user_responses": {},
                                           "history": [], "checkpoints": {}, "who": "world"}
    assert "This workflow has no entry preconditions." in fallback
    assert "Start at `ask`." in fallback
    nodes = section(fallback, "## 3. Nodes")
    assert "### `action`" in nodes and "### `user_prompt`" in nodes
    assert "### `conditional`" not in nodes and "### `states`" not in nodes  # only the types it uses
    endings = section(fallback, "## 5. Endings")
    assert "| `done` | success | ${computed.greeting} |  |" in endings
    assert "| `failed` | error | ${computed.last_error} | suggestion: Try again; retry_node: ask |" in endings
    mermaid = re.search(r"```mermaid\n(.*?)```", fallback, flags=re.S).group(1)
    assert mermaid == to_mermaid(wfexec.load(folder))
    types = section(fallback, "## 4. Templates, state and types")
    assert "| consequence | `set_state` |" in types


def test_entry_preconditions_are_listed_with_their_messages(cli):
    text = (SKILLS / "release-checklist" / "without-wfexec.md").read_text(encoding="utf-8")
    assert '- `tool_available(tool=git)`; when false: "git is not installed or not on PATH"' in text
    skill = (SKILLS / "release-checklist" / "SKILL.md").read_text(encoding="utf-8")
    assert frontmatter(skill)["compatibility"].endswith("needs git on PATH")


# -- determinism, writing, --check ------------------------------------------------------

def test_generation_is_deterministic(cli, tmp_path):
    first = make_skill(tmp_path / "a")
    second = make_skill(tmp_path / "b")
    generate(cli, first)
    generate(cli, second)
    bytes_a = (first / "SKILL.md").read_bytes()
    assert bytes_a == (second / "SKILL.md").read_bytes()
    done = generate(cli, first)
    assert done.returncode == 0 and "up to date" in done.stderr
    assert (first / "SKILL.md").read_bytes() == bytes_a


def test_check_exit_codes_and_diff(tmp_path):
    folder = make_skill(tmp_path)
    done = generate(wfexec_cli, folder, "--check")
    assert done.returncode == 1 and not (folder / "SKILL.md").exists()  # --check never writes
    generate(wfexec_cli, folder)
    assert generate(wfexec_cli, folder, "--check").returncode == 0
    workflow = folder / "workflow.yaml"
    workflow.write_text(workflow.read_text(encoding="utf-8").replace("Says hello", "Says goodbye"),
                        encoding="utf-8")
    before = (folder / "SKILL.md").read_bytes()
    done = generate(wfexec_cli, folder, "--check")
    assert done.returncode == 1
    assert "stale" in done.stderr and f"wfexec skill {folder}" in done.stderr
    assert "-Says hello" in done.stdout and "+Says goodbye" in done.stdout
    assert (folder / "SKILL.md").read_bytes() == before


def test_several_skills_at_once(cli, tmp_path):
    good, bad = make_skill(tmp_path, "good"), make_skill(tmp_path, "bad", workflow_name="other")
    done = cli("skill", good, bad)
    assert done.returncode == 2
    assert (good / "SKILL.md").exists() and not (bad / "SKILL.md").exists()


# -- hand-written blocks -----------------------------------------------------------------

def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_keep_blocks_survive_regeneration(cli, tmp_path):
    folder = make_skill(tmp_path)
    generate(cli, folder)
    skill = folder / "SKILL.md"
    edit(skill, f"{KEEP_OPEN}\n{KEEP_CLOSE}", f"{KEEP_OPEN}\nAsk the user's name first.\n## Not a heading\n{KEEP_CLOSE}")
    # A second block the user added at the end of the "The result" section.
    edit(skill, "\n## Without wfexec", f"{KEEP_OPEN}\nAlso post the greeting in chat.\n{KEEP_CLOSE}\n\n## Without wfexec")
    edit(folder / "workflow.yaml", "Says hello", "Says hi")
    done = generate(cli, folder)
    assert done.returncode == 0, done.stderr
    text = skill.read_text(encoding="utf-8")
    assert "Says hi" in text and "Says hello" not in text
    assert f"{KEEP_OPEN}\nAsk the user's name first.\n## Not a heading\n{KEEP_CLOSE}" in text
    assert text.index("# hello") < text.index("Ask the user's name first.") < text.index("## Run it")
    result = section(text, "## The result")
    assert f"{KEEP_OPEN}\nAlso post the greeting in chat.\n{KEEP_CLOSE}" in result
    assert generate(cli, folder, "--check").returncode == 0
    assert skills_ref.validate(folder) == []
    again = generate(cli, folder)
    assert "up to date" in again.stderr and skill.read_text(encoding="utf-8") == text


def test_a_keep_block_whose_section_is_gone_moves_to_the_end(cli, tmp_path):
    folder = make_skill(tmp_path)
    generate(cli, folder)
    skill = folder / "SKILL.md"
    edit(skill, "\n## The result", f"\n{KEEP_OPEN}\nPrefer option yes_please.\n{KEEP_CLOSE}\n\n## The result")
    assert "Prefer option yes_please." in section(skill.read_text(encoding="utf-8"), "## Questions")
    # The workflow stops asking: the Questions section disappears, the note must not.
    workflow = folder / "workflow.yaml"
    doc = yaml.safe_load(workflow.read_text(encoding="utf-8"))
    doc["start_node"] = "greet"
    del doc["nodes"]["ask"]
    doc["endings"]["failed"]["recovery"] = "Try again"
    del doc["endings"]["declined"]
    workflow.write_text(json.dumps(doc), encoding="utf-8")
    assert generate(cli, folder).returncode == 0
    text = skill.read_text(encoding="utf-8")
    assert "## Questions" not in text
    assert text.rstrip().endswith(f"{KEEP_OPEN}\nPrefer option yes_please.\n{KEEP_CLOSE}")


def test_an_unclosed_keep_block_stops_generation(cli, tmp_path):
    folder = make_skill(tmp_path)
    generate(cli, folder)
    skill = folder / "SKILL.md"
    edit(skill, f"{KEEP_OPEN}\n{KEEP_CLOSE}", f"{KEEP_OPEN}\nprecious notes")
    before = skill.read_bytes()
    edit(folder / "workflow.yaml", "Says hello", "Says hi")
    done = generate(cli, folder)
    assert done.returncode == 2 and "never closed" in done.stderr
    assert skill.read_bytes() == before


def test_a_hand_written_skill_md_is_only_replaced_with_force(cli, tmp_path):
    folder = make_skill(tmp_path)
    skill = folder / "SKILL.md"
    skill.write_text("---\nname: hello\ndescription: mine\n---\n\nMy own instructions.\n", encoding="utf-8")
    done = generate(cli, folder)
    assert done.returncode == 2
    assert "was not written by `wfexec skill`" in done.stderr and "--force" in done.stderr
    assert skill.read_text(encoding="utf-8").endswith("My own instructions.\n")
    assert generate(cli, folder, "--check").returncode == 1
    assert generate(cli, folder, "--force").returncode == 0
    assert "My own instructions." not in skill.read_text(encoding="utf-8")
    assert generate(cli, folder, "--check").returncode == 0
