"""`wfexec convert` / `wfexec states convert` (issue 30, point 5): a states folder or zip into one Raymond `.yaml`
as `ray convert` makes it (BFS order, manifest fields kept, targets without extensions), and back into a folder;
both directions run the same states."""

from __future__ import annotations

import zipfile

import yaml
from conftest import wfexec_cli
from conftest import wfexec_in_process as cli
from protocol_support import write_states

FLOW = {
    "workflow.yaml": "id: demo\nname: Demo\nrequires_human_input: false\nbackend: pi\ndefault_budget: 2.5\n",
    "README.md": "# about\n",
    "notes.txt": "not a state\n",
    "START.md": "---\nallowed_transitions:\n  - {tag: goto, target: COUNT.sh}\n  - {tag: result}\nmodel: opus\n---\n"
                "Count, then say so.  \nTrailing spaces stay.\n",
    "COUNT.sh": 'n=$(cat count 2>/dev/null || echo 0); echo $((n+1)) > count\n'
                'if [ $n -lt 2 ]; then echo "<goto>COUNT</goto>"; else echo "<goto>END</goto>"; fi\n',
    "END.sh": 'echo "<result>counted $(cat count)</result>"\n',
    "ORPHAN.sh": "echo '<result>never</result>'\n",
}


def test_a_folder_becomes_one_yaml_as_ray_convert_makes_it(tmp_path):
    write_states(tmp_path / "flow", FLOW)
    made = wfexec_cli("states", "convert", "flow", cwd=tmp_path)  # `wfexec convert` under `ray`'s subcommand
    assert made.returncode == 0, made.stderr
    assert made.stderr == "warning: skipping notes.txt: not a state\n"
    data = yaml.safe_load(made.stdout)
    assert list(data) == ["id", "name", "default_budget", "requires_human_input", "backend", "states"]
    assert list(data["states"]) == ["START", "COUNT", "END", "ORPHAN"]  # by distance from START, the unreachable last
    start = data["states"]["START"]
    assert start["allowed_transitions"] == [{"tag": "goto", "target": "COUNT"}, {"tag": "result"}]
    assert (start["model"], start["prompt"]) == ("opus", "Count, then say so.  \nTrailing spaces stay.\n")
    assert data["states"]["END"] == {"sh": FLOW["END.sh"]}


def test_both_ways_run_the_same_states(tmp_path):
    write_states(tmp_path / "flow", FLOW)
    assert cli("convert", "flow", "-o", "flow.yaml", cwd=tmp_path).returncode == 0
    with zipfile.ZipFile(tmp_path / "flow.zip", "w") as archive:
        for name, text in FLOW.items():
            archive.writestr(name, text)
    from_zip = cli("convert", "flow.zip", cwd=tmp_path)
    assert from_zip.stdout == (tmp_path / "flow.yaml").read_text()
    back = cli("convert", "flow.yaml", "--output", "again", cwd=tmp_path)
    assert back.returncode == 0 and "flow.yaml: written as the folder again" in back.stderr
    assert sorted(p.name for p in (tmp_path / "again").iterdir()) == ["COUNT.sh", "END.sh", "ORPHAN.sh", "START.md",
                                                                      "workflow.yaml"]
    assert yaml.safe_load((tmp_path / "again" / "workflow.yaml").read_text())["default_budget"] == 2.5
    outputs = []
    for scope in ("flow", "flow.yaml", "again"):
        (tmp_path / "count").unlink(missing_ok=True)
        ran = cli("states", scope, "--start", "COUNT", "--no-debug", cwd=tmp_path)
        outputs.append((ran.returncode, ran.stdout))
    assert outputs == [(0, "counted 3\n")] * 3


def test_what_convert_refuses_or_drops(tmp_path):
    write_states(tmp_path / "mixed", {"START.md": "Go.", "START.sh": "echo '<result>x</result>'\n"})
    refused = cli("convert", "mixed", cwd=tmp_path)
    assert refused.returncode == 2 and "state START is both a prompt and a script" in refused.stderr
    (tmp_path / "timed.yaml").write_text("states:\n  START:\n    sh: \"echo '<result>x</result>'\"\n    timeout: 5\n")
    dropped = cli("convert", "timed.yaml", cwd=tmp_path)
    assert dropped.returncode == 0 and "state START: `timeout` dropped" in dropped.stderr
    assert (tmp_path / "timed" / "START.sh").is_file()
    again = cli("convert", "timed.yaml", cwd=tmp_path)
    assert again.returncode == 2 and "exists and is not an empty folder" in again.stderr


def test_a_prompt_that_starts_with_dashes_stays_text_both_ways(tmp_path):
    """A `.yaml` prompt beginning with a `---` line (blanks after it included) gets an empty frontmatter in its
    file, `---`/`{}`/`---`, which Raymond's frontmatter pattern reads as no policy too."""
    from wfexec.protocol.policy import parse_frontmatter

    prompt = "--- \nnot frontmatter\n---\nWork, then <result>x</result>\n"
    (tmp_path / "dashes.yaml").write_text(yaml.safe_dump({"states": {"START": {"prompt": prompt}}}))
    made = cli("convert", "dashes.yaml", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert parse_frontmatter((tmp_path / "dashes" / "START.md").read_text()) == (None, prompt)
    back = cli("convert", "dashes", cwd=tmp_path)
    assert back.returncode == 0, back.stderr
    assert yaml.safe_load(back.stdout)["states"]["START"]["prompt"] == prompt
