"""`wfexec new skill NAME`: a skill folder that validates cleanly, has a current SKILL.md, and runs end to end
with its answers file."""

from __future__ import annotations

import json

import skills_ref

from conftest import wfexec_cli

SCHEMA_URL = "https://wfexec.dev/schemas/workflow.schema.json"


def test_new_skill_validates_runs_and_has_its_skill_md(tmp_path):
    done = wfexec_cli("new", "skill", "hello-world", "--dir", tmp_path / "skills")
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "skills" / "hello-world"
    assert sorted(p.name for p in folder.iterdir()) == ["SKILL.md", "answers.yaml", "tests", "without-wfexec.md",
                                                        "workflow.yaml"]
    assert f"wfexec run {folder.as_posix()} --answers {folder.as_posix()}/answers.yaml" in done.stderr

    validated = wfexec_cli("validate", "--strict", "--format", "json", folder)
    assert validated.returncode == 0 and json.loads(validated.stdout)["diagnostics"] == []  # not even a warning
    assert wfexec_cli("skill", "--check", folder).returncode == 0
    assert skills_ref.validate(folder) == []

    run = wfexec_cli("run", folder, "--answers", folder / "answers.yaml", "--format", "json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert (result["ending"], result["message"]) == ("done", "hello-world ran")
    assert result["state"]["user_responses"]["confirm"]["id"] == "go"

    tested = wfexec_cli("test", folder, "--format", "json", cwd=tmp_path)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    report = json.loads(tested.stdout)
    assert (report["passed"], report["failed"]) == (2, 0)
    assert [c["file"] for c in report["cases"]] == ["skills/hello-world/tests/hello-world.yaml"] * 2


def test_the_schema_comment_points_at_the_nearest_schema(cli, tmp_path):
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "workflow.schema.json").write_text("{}", encoding="utf-8")
    made = cli("new", "skill", "near", cwd=tmp_path)  # --dir defaults to skills/
    assert made.returncode == 0 and "schemas/workflow.schema.json: written" not in made.stderr
    first = (tmp_path / "skills" / "near" / "workflow.yaml").read_text(encoding="utf-8").splitlines()[0]
    assert first == "# yaml-language-server: $schema=../../schemas/workflow.schema.json"


def test_without_a_schema_file_one_is_written_and_the_comment_points_at_it(cli, tmp_path):
    """A URL would need a server: editors and check-jsonschema read the file the comment names."""
    project = tmp_path / "project"
    project.mkdir()
    made = cli("new", "skill", "far", "--dir", tmp_path / "elsewhere", cwd=project)
    assert made.returncode == 0 and "schemas/workflow.schema.json: written" in made.stderr  # said, as every file
    first = (tmp_path / "elsewhere" / "far" / "workflow.yaml").read_text(encoding="utf-8").splitlines()[0]
    assert first == "# yaml-language-server: $schema=../../project/schemas/workflow.schema.json"
    written = (tmp_path / "elsewhere" / "far" / first.split("=", 1)[1]).resolve()
    assert written == (project / "schemas" / "workflow.schema.json").resolve()
    assert json.loads(written.read_text())["$id"] == SCHEMA_URL


def test_an_existing_folder_is_never_overwritten(cli, tmp_path):
    folder = tmp_path / "taken"
    folder.mkdir()
    (folder / "workflow.yaml").write_text("mine", encoding="utf-8")
    done = cli("new", "skill", "taken", "--dir", tmp_path)
    assert done.returncode == 2
    assert "already exists" in done.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["workflow.yaml"]
    assert (folder / "workflow.yaml").read_text(encoding="utf-8") == "mine"


def test_a_name_that_is_not_a_skill_name_is_refused(cli, tmp_path):
    done = cli("new", "skill", "Hello World", "--dir", tmp_path / "skills")
    assert done.returncode == 2
    assert "try 'hello-world'" in done.stderr
    assert not (tmp_path / "skills").exists()


def test_a_v8_skill_validates_runs_and_names_the_v8_schema(cli, tmp_path):
    # In this process (`cli`): the commands as processes, on a new skill, are the test above.
    done = cli("new", "skill", "hello-v8", "--v8", "--dir", tmp_path / "skills", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "skills" / "hello-v8"
    text = (folder / "workflow.yaml").read_text(encoding="utf-8")
    assert text.splitlines()[0] == "# yaml-language-server: $schema=../../schemas/workflow-v8.schema.json"
    assert (tmp_path / "schemas" / "workflow-v8.schema.json").is_file()  # written where the comment points
    assert "type: ending" in text and "default_error: failed" in text and "endings:" not in text
    tested = cli("test", folder, "--coverage", cwd=tmp_path)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "2 passed, 0 failed" in tested.stdout
    # Its cases take every branch it has; only the route the v8 rewrite adds to default_error is left.
    assert "nodes 2/2, branches 3/3 (100%); routes to default_error 0/1 taken" in tested.stdout

    validated = cli("validate", "--strict", "--format", "json", folder)
    assert validated.returncode == 0 and json.loads(validated.stdout)["diagnostics"] == []
    assert skills_ref.validate(folder) == []
    run = cli("run", folder, "--answers", folder / "answers.yaml", "--format", "json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert (result["ending"], result["message"], result["summary"]) == ("done", "hello-v8 ran", {"runs": 1})
