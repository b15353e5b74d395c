"""Options built from a list in state, as the hiivmind gateway writes them: `option_template` without `id`,
each item named by the singular of the list's name (`available_corpora` → `corpus`) as well as `item`."""

from __future__ import annotations

import pytest

import wfexec
from wfexec.nodes.user_prompt import singular
from wfexec.running.engine import RunError
from conftest import ROOT, compat_root

PICK = ROOT / "tests" / "workflows" / "compat" / "pick_from_state.yaml"


def test_an_option_template_without_id_validates_and_names_the_item_by_the_singular_of_the_list():
    assert wfexec.validate(PICK) == []
    result = wfexec.run(PICK, answers={"select_corpus": "ibis"})
    assert result.message == "picked ibis"
    assert result.state["user_responses"]["select_corpus"] == {
        "id": "ibis", "raw": {"label": "ibis [placeholder]"},
        "selected": {"name": "ibis", "status": "placeholder", "description": "Ibis docs"}}


def test_the_person_sees_labels_rendered_from_the_template(cli, tmp_path):
    done = cli("run", "--ephemeral", "--non-interactive", PICK, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert "options: polars, ibis (or free text)" in done.stdout + done.stderr
    by_label = cli("run", "--ephemeral", "--answer", "select_corpus=polars [built]", PICK, cwd=tmp_path)
    assert (by_label.returncode, by_label.stdout.strip()) == (0, "picked polars")


def test_item_and_index_are_bound_too_and_a_wrong_name_is_a_clear_run_error(run_yaml):
    text = """
        name: t
        version: 1
        start_node: pick
        initial_state:
          computed:
            entries: [{title: Alpha}, {title: Beta}]
        nodes:
          pick:
            type: user_prompt
            prompt:
              question: Which?
              options_from_state: computed.entries
              option_template: {label: "LABEL"}
            on_response:
              selected: {next_node: done}
        endings:
          done: {type: success, message: "${user_responses.pick.id}"}
    """
    result, _ = run_yaml(text.replace("LABEL", "${index}: ${item.title} = ${entry.title}"), answers={"pick": "1: Beta = Beta"})
    assert result.message == "1"  # no `id` and no `name`: the position
    with pytest.raises(RunError) as caught:
        run_yaml(text.replace("LABEL", "${corpus.title}"), answers={"pick": "x"})
    assert caught.value.node == "pick"
    assert "`item`, `entry`, `index`" in caught.value.hint


@pytest.mark.parametrize("written, name", [
    ("computed.available_corpora", "corpus"), ("sources", "source"), ("computed.entries", "entry"),
    ("matches", "match"), ("boxes", "box"), ("classes", "class"), ("people", "person"),
    ("${computed.items}", "item"), ("status", None), ("config", None), ("glass", None)])
def test_the_singular_rule(written, name):
    assert singular(written) == name


def test_the_real_gateway_option_templates_validate():
    for commit in ("733502d", "856e42a"):
        path = compat_root() / "hiivmind-corpus" / commit / "commands/hiivmind-corpus/workflow.yaml"
        codes = {d.code for d in wfexec.validate(path)}
        assert "missing-field" not in codes and "unreachable-node" not in codes
