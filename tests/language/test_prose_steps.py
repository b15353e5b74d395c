"""Prose in a `compute`/`evaluate` field is a judgement step on the LLM backend, not an error."""

from __future__ import annotations

import json
import sys

import pytest
import yaml

import wfexec
from wfexec.running.engine import RunStopped
from conftest import ROOT, compat_root, wfexec_cli

PROSE = ROOT / "tests" / "workflows" / "compat" / "prose_steps.yaml"

# Answers every prompt with a JSON value chosen by what the prompt asks for.
FAKE_LLM = """\
import json, sys
prompt = sys.stdin.read()
if "true or false" in prompt:
    print("true")
else:
    print("```json\\n" + json.dumps({"name": "polars", "sources": 1}) + "\\n```")
"""


class Replies:
    def __init__(self, *replies):
        self.replies = list(replies)
        self.prompts = []

    def complete(self, prompt):
        self.prompts.append(prompt)
        return self.replies.pop(0)


def test_validate_lists_each_prose_step_as_a_warning_and_strict_refuses_them(cli):
    diagnostics = wfexec.validate(PROSE)
    assert [(d.severity, d.code, d.yaml_path) for d in diagnostics] == [
        ("warning", "prose-step", "nodes.read_config.actions[0].expression"),
        ("warning", "prose-step", "nodes.read_config.actions[1].expression")]
    strict = cli("validate", "--strict", PROSE)
    assert strict.returncode == 2
    assert "error: the `expression` of compute is prose, not code" in strict.stdout


def test_the_prompt_is_the_text_and_the_state_it_names_and_the_reply_is_stored_as_json():
    backend = Replies('{"name": "polars", "sources": 1}', "false")
    result = wfexec.run(PROSE, backend=backend)
    assert result.message == "polars: refreshed=false"
    assert result.state["computed"]["meta"] == {"name": "polars", "sources": 1}
    assert result.state["flags"]["needs_refresh"] is False
    compute, evaluate = backend.prompts
    assert compute.startswith("# Parse config.yaml YAML content\n# Extract corpus metadata and sources from config\n")
    named = json.loads(compute.split("```json\n")[1].split("\n```")[0])
    assert named == {"config": {"corpus": {"name": "polars"}, "sources": [{"id": "docs"}]}}
    assert compute.rstrip().endswith("or an object).")
    assert evaluate.rstrip().endswith("Reply with only a JSON value: true or false.")


def test_a_reply_that_is_not_json_fails_the_action_saying_so():
    result = wfexec.run(PROSE, backend=Replies("I parsed it, the name is polars"))
    assert result.ending == "failed"
    assert "the LLM's reply is not a JSON value: 'I parsed it, the name is polars'" in result.message


# Models often say a sentence around the JSON they were asked for, or show other code before it.
TALKATIVE_REPLIES = {
    "a sentence before": 'Here is the result:\n```json\n{"name": "polars", "sources": 1}\n```',
    "and one after": 'Parsed:\n```json\n{"name": "polars", "sources": 1}\n```\nLet me know if you need more.',
    "the first json block": ('I read it with:\n```python\nyaml.safe_load(text)\n```\nwhich gives:\n'
                             '```json\n{"name": "polars", "sources": 1}\n```\nnot\n```json\n{"name": "x"}\n```'),
    "an unmarked block": 'The metadata:\n```\n{"name": "polars", "sources": 1}\n```',
}


@pytest.mark.parametrize("reply", TALKATIVE_REPLIES.values(), ids=TALKATIVE_REPLIES)
def test_a_reply_with_its_json_in_a_fenced_block_after_prose_is_read(reply):
    result = wfexec.run(PROSE, backend=Replies(reply, "Sure:\n```json\nfalse\n```"))
    assert result.message == "polars: refreshed=false", result.message
    assert result.state["computed"]["meta"] == {"name": "polars", "sources": 1}


def test_the_cli_reads_a_replayed_reply_whose_json_follows_a_sentence(tmp_path):
    cassette = tmp_path / "cassette.yaml"
    cassette.write_text(yaml.safe_dump({"wfexec_cassette": 1, "interactions": [
        {"kind": "llm", "reply": TALKATIVE_REPLIES["a sentence before"]}, {"kind": "llm", "reply": "true"}]}))
    ran = wfexec_cli("run", "--ephemeral", PROSE, "--replay", cassette, cwd=tmp_path)
    assert (ran.returncode, ran.stdout.strip()) == (0, "polars: refreshed=true"), ran.stderr


def test_a_fenced_block_that_is_not_json_is_refused_saying_why():
    result = wfexec.run(PROSE, backend=Replies('Here is the result:\n```json\n{"name": polars}\n```'))
    assert result.ending == "failed"
    assert "the LLM's reply is not a JSON value: 'Here is the result: ```json" in result.message
    assert "(its fenced block: Expecting value: line 1 column 10" in result.message


def test_without_a_backend_the_run_stops_naming_the_node(cli, tmp_path):
    with pytest.raises(RunStopped) as caught:
        wfexec.run(PROSE)
    assert caught.value.node == "read_config"
    done = cli("run", "--ephemeral", PROSE, cwd=tmp_path)
    assert done.returncode == 4
    assert "node 'read_config': the prose compute step at nodes.read_config.actions[0] needs an LLM backend" \
        in done.stderr


def test_dry_run_prints_the_prompts(cli, tmp_path):
    done = cli("run", "--ephemeral", "--dry-run", PROSE, cwd=tmp_path)
    assert "--- prompt for the prose compute step at nodes.read_config.actions[0] (dry run: not sent) ---\n" \
           "# Parse config.yaml YAML content" in done.stdout
    assert "Decide whether the corpus in config has any sources that need a refresh" in done.stdout


def test_record_then_replay_answers_prose_steps_offline(cli, tmp_path):
    (tmp_path / "fake_llm.py").write_text(FAKE_LLM)
    cassette = tmp_path / "prose.cassette.yaml"
    recorded = cli("run", "--ephemeral", PROSE, "--backend", f"command:{sys.executable} fake_llm.py",
                   "--record", cassette, cwd=tmp_path)
    assert (recorded.returncode, recorded.stdout.strip()) == (0, "polars: refreshed=true"), recorded.stderr
    assert [i["kind"] for i in yaml.safe_load(cassette.read_text())["interactions"]] == ["llm", "llm"]
    (tmp_path / "fake_llm.py").write_text("raise SystemExit('the LLM must not be called on replay')")
    replayed = cli("run", "--ephemeral", PROSE, "--replay", cassette, cwd=tmp_path)
    assert (replayed.returncode, replayed.stdout) == (0, recorded.stdout), replayed.stderr


def test_a_prose_precondition_is_a_judgement_too(run_yaml):
    backend = Replies("true")
    result, _ = run_yaml("""
        name: t
        version: 1
        start_node: gate
        nodes:
          gate:
            type: conditional
            condition:
              type: evaluate_expression
              expression: "# True when the user asked for a full rebuild of the index"
            branches: {on_true: yes_end, on_false: no_end}
        endings:
          yes_end: {type: success, message: rebuild}
          no_end: {type: success, message: keep}
    """, backend=backend)
    assert result.message == "rebuild"
    assert backend.prompts[0].rstrip().endswith("true or false.")


def test_the_real_comment_only_compute_fields_are_prose_steps():
    path = compat_root() / "hiivmind-corpus/856e42a/skills/hiivmind-corpus-add-source/workflow.yaml"
    prose = [d.yaml_path for d in wfexec.validate(path) if d.code == "prose-step"]
    assert prose == ["nodes.locate_corpus.actions[1].expression",
                     "nodes.setup_llms_txt_source.actions[1].expression"]


def test_a_prose_step_is_an_llm_effect_that_resume_will_not_silently_repeat():
    from wfexec.durable.journal import has_outside_effects, is_idempotent

    workflow = wfexec.load(PROSE)
    assert workflow.effects()["llm"] == {"compute", "evaluate"}
    node = workflow.nodes["read_config"]
    assert has_outside_effects(workflow, node) and not is_idempotent(workflow, node)
    assert is_idempotent(workflow, workflow.nodes["refresh"])


# Older hiivmind files give some action nodes no `actions`, only their work in prose.
PROSE_EFFECT = """\
name: prose-effect
version: "1"
start_node: parse_config
initial_state: {computed: {config_raw: "corpus: {name: polars}"}}
nodes:
  parse_config:
    type: action
    description: Parse the configuration
    effect: |
      Parse computed.config_raw as YAML and keep the corpus name.
      result = parse(config_raw)
    on_success: greet
    on_failure: failed
  greet:
    type: action
    actions: [{type: set_state, field: computed.greeting, value: "Corpus ${computed.corpus_name}"}]
    on_success: done
endings:
  done: {type: success, message: "${computed.greeting}"}
  failed: {type: error, message: "${computed.last_error}"}
"""


def test_a_prose_effect_is_a_judgement_step_whose_reply_sets_what_the_next_nodes_read(tmp_path, cli):
    path = tmp_path / "workflow.yaml"
    path.write_text(PROSE_EFFECT)
    checked = cli("validate", path)
    assert checked.returncode == 0
    assert "workflow.yaml:9:13: warning: action node 'parse_config' has no `actions`, only a prose `effect`" \
        in checked.stdout + checked.stderr
    assert "- parse_config: prose effect at nodes.parse_config.effect" in checked.stdout + checked.stderr
    assert cli("validate", "--strict", path).returncode != 0
    prompts = []

    class Model:
        def complete(self, prompt):
            prompts.append(prompt)
            return '{"computed.corpus_name": "polars"}'

    result = wfexec.run(path, backend=Model())
    assert result.message == "Corpus polars"
    assert "Parse computed.config_raw as YAML" in prompts[0]
    assert '"computed.config_raw": "corpus: {name: polars}"' in prompts[0]
    assert "- `computed.corpus_name`" in prompts[0]

    class Unhelpful:
        def complete(self, prompt):
            return "Done."

    result = wfexec.run(path, backend=Unhelpful())
    assert result.ending == "failed" and "the LLM's reply is not a JSON value" in result.message


def test_a_run_stopped_for_want_of_a_backend_resumes_with_one_as_it_says(cli, tmp_path):
    (tmp_path / "fake_llm.py").write_text(FAKE_LLM)
    store = tmp_path / "runs.db"
    stopped = cli("run", PROSE, "--store", store, cwd=tmp_path)
    assert stopped.returncode == 4 and "resume it with --backend" in stopped.stderr, stopped.stderr
    run_id = json.loads(cli("runs", "--store", store, "--format", "json").stdout)[0]["id"]
    # Nothing was sent and nothing before it in the step touched the world: the step simply runs, no --rerun.
    resumed = cli("resume", run_id, "--store", store, "--backend", f"command:{sys.executable} fake_llm.py",
                  cwd=tmp_path)
    assert (resumed.returncode, resumed.stdout.strip()) == (0, "polars: refreshed=true"), resumed.stderr


WRITES_THEN_ASKS_THE_LLM = """\
name: writes-then-asks
version: "1"
start_node: work
nodes:
  work:
    type: action
    actions:
      - {type: run_command, command: [bash, -c, "echo once >> note.txt"]}
      - type: compute
        expression: "# Summarise the note"
        store_as: computed.summary
    on_success: done
endings:
  done: {type: success, message: "${computed.summary}"}
"""


def test_a_step_that_ran_a_command_before_the_llm_was_missing_still_asks_before_it_runs_again(cli, tmp_path):
    (tmp_path / "workflow.yaml").write_text(WRITES_THEN_ASKS_THE_LLM)
    (tmp_path / "fake_llm.py").write_text("print('\"short\"')")
    store = tmp_path / "runs.db"
    assert cli("run", "workflow.yaml", "--store", store, cwd=tmp_path).returncode == 4
    run_id = json.loads(cli("runs", "--store", store, "--format", "json").stdout)[0]["id"]
    backend = f"command:{sys.executable} fake_llm.py"
    refused = cli("resume", run_id, "--store", store, "--backend", backend, cwd=tmp_path)
    assert refused.returncode == 3 and "not safe to run twice" in refused.stderr, refused.stderr
    rerun = cli("resume", run_id, "--store", store, "--backend", backend, "--rerun", cwd=tmp_path)
    assert (rerun.returncode, rerun.stdout.strip()) == (0, "short"), rerun.stderr
    assert (tmp_path / "note.txt").read_text() == "once\nonce\n"  # run again, as the person chose
