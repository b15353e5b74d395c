"""A dry run's placeholders (docs/guide/using.md, "plan and dry run"): a step it does not run leaves one at every
state path it would have written; a state-only step that reads one stores one in turn; a condition that needs one's
real value stops the run (exit 4); text that reads one (a message, a question, an ending) shows it as one.

What reads a placeholder is found from what each expression reads and the state paths a call names, never from the
text of the call: `config.yaml` in a message, or `read_config` in a value, reads no `config`.
"""

from __future__ import annotations

import pytest

# Reading a file is an outside effect: a dry run leaves `<dry-run: computed.raw>` there.
READ = """\
      - type: read_file
        path: data.txt
        store_as: computed.raw
"""


def _dry(cli, write_workflow, tmp_path, text, *args):
    (tmp_path / "data.txt").write_text("")
    path = write_workflow(text)
    return cli("run", path, "--dry-run", "--non-interactive", *args, cwd=tmp_path)


def _workflow(actions: str, nodes: str = "", message: str = "ok", next_node: str = "done") -> str:
    return f"""\
name: t
version: "1.0"
start_node: act
initial_state:
  flags: {{empty: false, known: false}}
nodes:
  act:
    type: action
    actions:
{actions}    on_success: {next_node}
    on_failure: failed
{nodes}endings:
  done:
    type: success
    message: "{message}"
  other:
    type: success
    message: "other"
  failed:
    type: failure
    message: "${{computed.last_error}}"
"""


# -- 1. every path a skipped step writes gets a placeholder ---------------------------------------------------------

def test_a_flag_set_from_a_placeholder_is_a_placeholder_too(cli, write_workflow, tmp_path):
    """`evaluate ... set_flag` and `set_flag value: ${...}` write flags.<name>, which no `store_as` names."""
    done = _dry(cli, write_workflow, tmp_path, _workflow(READ + """\
      - type: evaluate
        expression: "computed.raw.length == 0"
        set_flag: empty
      - type: set_flag
        flag: known
        value: "${computed.raw != null}"
""", message="empty=${flags.empty} known=${flags.known}"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "empty=<dry-run: flags.empty> known=<dry-run: flags.known>" in done.stdout


# -- 2. what reads a placeholder, exactly ----------------------------------------------------------------------------

def test_a_name_that_only_looks_like_a_placeholder_path_reads_none(cli, write_workflow, tmp_path):
    """`config` holds a placeholder: `config.yaml` in a message's text and `read_config` in a value read nothing."""
    done = _dry(cli, write_workflow, tmp_path, _workflow("""\
      - type: read_file
        path: config.yaml
        store_as: config
      - type: set_state
        field: computed.step
        value: read_config
      - type: display_message
        message: "Wrote ${computed.step} to config.yaml"
""", message="step=${computed.step}"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Wrote read_config to config.yaml" in done.stdout
    assert "step=read_config" in done.stdout


CHECK_FLAG = """\
  check:
    type: conditional
    condition:
      type: flag_set
      flag: empty
    branches:
      true: done
      false: other
"""


def test_a_condition_on_a_placeholder_flag_stops_the_dry_run(cli, write_workflow, tmp_path):
    """`flag: empty` reads flags.empty."""
    done = _dry(cli, write_workflow, tmp_path, _workflow(READ + """\
      - type: evaluate
        expression: "computed.raw.length == 0"
        set_flag: empty
""", CHECK_FLAG, next_node="check"))
    assert done.returncode == 4, done.stdout + done.stderr
    err = done.stderr.replace("\n", " ")
    assert "node 'check'" in err and "needs the real value of flags.empty" in err


def test_a_condition_on_a_real_value_beside_a_placeholder_is_decided(cli, write_workflow, tmp_path):
    """Only what the condition reads counts: `computed.count` is real, `computed.raw` beside it is not."""
    done = _dry(cli, write_workflow, tmp_path, _workflow(READ + """\
      - type: set_state
        field: computed.count
        value: 0
""", """\
  check:
    type: conditional
    condition:
      type: evaluate_expression
      expression: "computed.count == 0"
    branches:
      true: done
      false: other
""", message="decided", next_node="check"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "decided" in done.stdout


# -- 3. every expression a dry run evaluates ---------------------------------------------------------------------------

FETCH = """\
      - type: web_fetch
        url: https://example.com/a
        store_as: computed.page
"""


PROMPT = """\
  approve:
    type: user_prompt
    prompt:
      question: "Save ${computed.page.content.substring(0, 5)}...?"
      header: "Save"
      options:
        - id: save
          label: "Save ${computed.page.content.length} characters"
        - id: skip
          label: "Skip"
    on_response:
      save:
        next_node: done
      skip:
        next_node: done
"""


def test_text_that_reads_a_placeholder_shows_one_instead_of_failing(cli, write_workflow, tmp_path):
    """A question's text and options, an ending: `.content` of a placeholder is no JavaScript error, it is unknown."""
    text = _workflow(FETCH, PROMPT, message="kept ${computed.page.content.length} characters", next_node="approve")
    done = _dry(cli, write_workflow, tmp_path, text, "--answer", "approve=skip")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "TypeError" not in done.stdout + done.stderr
    assert "kept <dry-run: computed.page.content.length> characters" in done.stdout
    waiting = _dry(cli, write_workflow, tmp_path, text)
    assert waiting.returncode == 3, waiting.stdout + waiting.stderr
    assert "Save <dry-run: computed.page.content.substring(0, 5)>...?" in waiting.stdout + waiting.stderr


def test_a_route_computed_from_a_placeholder_stops_the_dry_run(cli, write_workflow, tmp_path):
    """`dynamic_route` writes computed.dynamic_target; the route that reads it cannot be decided."""
    done = _dry(cli, write_workflow, tmp_path, _workflow(READ + """\
      - type: dynamic_route
        action: "${computed.raw.length ? 'done' : 'other'}"
""", next_node='"${computed.dynamic_target}"'))
    assert done.returncode == 4, done.stdout + done.stderr
    assert "needs the real value of computed.dynamic_target" in done.stderr.replace("\n", " ")


def test_options_read_from_a_placeholder_stop_the_dry_run(cli, write_workflow, tmp_path):
    done = _dry(cli, write_workflow, tmp_path, _workflow(FETCH, """\
  pick:
    type: user_prompt
    prompt:
      question: "Which one?"
      header: "Pick"
      options_from_state: computed.page.items
    on_response:
      selected:
        next_node: done
""", next_node="pick"), "--answer", "pick=a")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "needs the real value of computed.page" in done.stderr.replace("\n", " ")


# -- 4. messages are shown ---------------------------------------------------------------------------------------------

def test_a_message_that_reads_a_placeholder_is_shown_with_it(cli, write_workflow, tmp_path):
    done = _dry(cli, write_workflow, tmp_path, _workflow(READ + """\
      - type: display_message
        message: "Read ${computed.raw.length} characters from data.txt"
      - type: display_message
        message: "It starts: ${computed.raw.substring(0, 5)}"
"""))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Read <dry-run: computed.raw.length> characters from data.txt" in done.stdout
    assert "It starts: <dry-run: computed.raw.substring(0, 5)>" in done.stdout


# -- 5. what the LLM would have given ----------------------------------------------------------------------------------

def test_a_prose_steps_result_is_a_placeholder_and_a_condition_on_it_stops(cli, write_workflow, tmp_path):
    """The prompt is printed, not sent: the step stores no `null` for a condition to decide on."""
    done = _dry(cli, write_workflow, tmp_path, _workflow("""\
      - type: compute
        expression: |
          # Pick the three most useful pages about polars
        store_as: computed.pages
""", """\
  check:
    type: conditional
    condition:
      type: evaluate_expression
      expression: "computed.pages == null"
    branches:
      true: done
      false: other
""", next_node="check"))
    assert done.returncode == 4, done.stdout + done.stderr
    assert "# Pick the three most useful pages about polars" in done.stdout
    assert "needs the real value of computed.pages" in done.stderr.replace("\n", " ")


def test_a_judgement_condition_prints_its_prompt_and_stops(cli, write_workflow, tmp_path):
    done = _dry(cli, write_workflow, tmp_path, _workflow("""\
      - type: set_state
        field: computed.topic
        value: polars
""", """\
  check:
    type: conditional
    condition:
      type: evaluate_expression
      expression: "# Decide whether the topic in computed.topic is worth a corpus of its own"
    branches:
      true: done
      false: other
""", next_node="check"))
    assert done.returncode == 4, done.stdout + done.stderr
    assert "Decide whether the topic in computed.topic is worth a corpus of its own" in done.stdout
    assert "needs the LLM's answer" in done.stderr.replace("\n", " ")


def test_the_values_a_document_step_replies_with_are_placeholders(cli, write_workflow, tmp_path):
    """A reference node without `store_as` sets the paths read later that nothing writes, from its reply: a dry run
    has none to read them from, which is no failure of the step."""
    (tmp_path / "guide.md").write_text("# Guide\n\n## Reviewing\n\nSay whether the diff is fine.\n")
    done = _dry(cli, write_workflow, tmp_path, _workflow("""\
      - type: set_state
        field: computed.diff
        value: "+ a line"
""", """\
  review:
    type: reference
    doc: guide.md
    section: Reviewing
    context: {diff: "${computed.diff}"}
    on_success: check
    on_failure: failed
  check:
    type: conditional
    condition:
      type: evaluate_expression
      expression: "computed.verdict == 'fine'"
    branches:
      true: done
      false: other
""", next_node="review"))
    assert done.returncode == 4, done.stdout + done.stderr
    assert "Say whether the diff is fine." in done.stdout
    assert "needs the real value of computed.verdict" in done.stderr.replace("\n", " ")
