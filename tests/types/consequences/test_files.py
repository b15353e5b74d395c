"""read_file, read_yaml, read_json, write_file, create_directory, delete_file and local_file_ops,
run for real through workflows on real files."""

from __future__ import annotations

import json
import os

import pytest

from wfexec.language.loader import load_file
from wfexec.types.registry import consequences
from conftest import one_action


@pytest.fixture
def work(tmp_path):
    """A working directory with a sibling folder `outside` that a write must not reach by accident."""
    (tmp_path / "work").mkdir()
    (tmp_path / "outside").mkdir()
    return tmp_path / "work"


def leftovers(folder):
    """Temporary files an interrupted atomic write would leave behind."""
    return [p.name for p in folder.rglob("*") if p.name.endswith(".tmp")]


# --------------------------------------------------------------------------- #
# reading

def test_read_file_stores_the_text(run_yaml, tmp_path):
    (tmp_path / "notes.md").write_text("# Títle\n\nline two\n", encoding="utf-8")
    result, _ = run_yaml(one_action({"type": "read_file", "path": "notes.md", "store_as": "computed.notes"}))
    assert result.ending == "done"
    assert result.state["computed"]["notes"] == "# Títle\n\nline two\n"


def test_read_file_missing_routes_on_failure(run_yaml):
    result, _ = run_yaml(one_action({"type": "read_file", "path": "nope.txt", "store_as": "computed.x"}))
    assert result.ending == "failed"
    assert "no such file: 'nope.txt'" in result.message
    assert "x" not in result.state["computed"]


def test_read_file_on_failure_create_empty_reads_a_missing_file_as_empty_text(run_yaml, tmp_path):
    """hiivmind-corpus's refresh reads `.gitignore` with `on_failure: "create_empty"`, then appends to what it read."""
    call = {"type": "read_file", "path": ".gitignore", "store_as": "computed.ignored", "on_failure": "create_empty"}
    result, _ = run_yaml(one_action(call))
    assert result.ending == "done"
    assert result.state["computed"]["ignored"] == ""
    assert not (tmp_path / ".gitignore").exists()  # read as empty, not made
    (tmp_path / ".gitignore").write_text("*.log\n")
    result, _ = run_yaml(one_action(call))
    assert result.state["computed"]["ignored"] == "*.log\n"
    (tmp_path / "folder").mkdir()  # only a missing file reads as empty
    result, _ = run_yaml(one_action({**call, "path": "folder"}))
    assert result.ending == "failed" and "is a directory" in result.message


def test_read_file_refuses_bytes_that_are_not_utf8(run_yaml, tmp_path):
    (tmp_path / "blob.bin").write_bytes(b"ok\xff\xfe")
    result, _ = run_yaml(one_action({"type": "read_file", "path": "blob.bin", "store_as": "computed.x"}))
    assert result.ending == "failed"
    assert "'blob.bin' is not UTF-8 text" in result.message


def test_read_file_of_a_directory_fails(run_yaml, tmp_path):
    (tmp_path / "folder").mkdir()
    result, _ = run_yaml(one_action({"type": "read_file", "path": "folder", "store_as": "computed.x"}))
    assert result.ending == "failed"
    assert "is a directory" in result.message


def test_read_yaml_parses_into_state(run_yaml, tmp_path):
    (tmp_path / "config.yaml").write_text("sources:\n  - id: a\n    depth: 1\nyes: no\n", encoding="utf-8")
    result, _ = run_yaml(one_action({"type": "read_yaml", "path": "config.yaml", "store_as": "config"}))
    assert result.ending == "done"
    assert result.state["config"] == {"sources": [{"id": "a", "depth": 1}], "yes": "no"}


def test_read_yaml_reports_the_first_syntax_error(run_yaml, tmp_path):
    (tmp_path / "bad.yaml").write_text("a: 1\nb: [unclosed\n", encoding="utf-8")
    result, _ = run_yaml(one_action({"type": "read_yaml", "path": "bad.yaml", "store_as": "config"}))
    assert result.ending == "failed"
    assert "cannot read YAML from 'bad.yaml'" in result.message
    assert "(line " in result.message


def test_read_yaml_missing_file_fails(run_yaml):
    result, _ = run_yaml(one_action({"type": "read_yaml", "path": "absent.yaml", "store_as": "config"}))
    assert result.ending == "failed"
    assert "no such file" in result.message


def test_read_json_parses_into_state(run_yaml, tmp_path):
    (tmp_path / "data.json").write_text('{"n": 2, "items": [true, null]}', encoding="utf-8")
    result, _ = run_yaml(one_action({"type": "read_json", "path": "data.json", "store_as": "computed.data"}))
    assert result.ending == "done"
    assert result.state["computed"]["data"] == {"n": 2, "items": [True, None]}


def test_read_json_names_line_and_column_of_bad_json(run_yaml, tmp_path):
    (tmp_path / "data.json").write_text('{\n  "n": 2,\n}', encoding="utf-8")
    result, _ = run_yaml(one_action({"type": "read_json", "path": "data.json", "store_as": "computed.data"}))
    assert result.ending == "failed"
    assert "'data.json' is not valid JSON" in result.message
    assert "line 3" in result.message


# --------------------------------------------------------------------------- #
# writing

def test_write_file_creates_parents_and_leaves_no_temp_files(run_yaml, tmp_path):
    result, _ = run_yaml(one_action({"type": "write_file", "path": "deep/er/out.txt", "content": "hello ${who}\n"},
                                    initial_state={"who": "world"}))
    assert result.ending == "done"
    assert (tmp_path / "deep/er/out.txt").read_text(encoding="utf-8") == "hello world\n"
    assert sorted(p.name for p in (tmp_path / "deep/er").iterdir()) == ["out.txt"]
    assert leftovers(tmp_path) == []


def test_write_file_replaces_existing_content_and_keeps_its_mode(run_yaml, tmp_path):
    target = tmp_path / "run.sh"
    target.write_text("old\n", encoding="utf-8")
    target.chmod(0o751)
    result, _ = run_yaml(one_action({"type": "write_file", "path": "run.sh", "content": "new\n"}))
    assert result.ending == "done"
    assert target.read_text(encoding="utf-8") == "new\n"
    assert target.stat().st_mode & 0o777 == 0o751


def test_write_file_serialises_mappings_by_extension(run_yaml, tmp_path):
    config = {"zeta": 1, "alpha": {"text": "two\nlines\n", "list": [1, "yes"]}}
    result, _ = run_yaml(one_action(
        {"type": "write_file", "path": "out.yaml", "content": "${config}"},
        {"type": "write_file", "path": "out.json", "content": "${config}"},
        {"type": "write_file", "path": "out.txt", "content": "${config.alpha.list}"},
        {"type": "write_file", "path": "count.txt", "content": 42},
        initial_state={"config": config}))
    assert result.ending == "done"
    yaml_text = (tmp_path / "out.yaml").read_text(encoding="utf-8")
    assert yaml_text.index("zeta") < yaml_text.index("alpha")  # the order the workflow built
    assert load_file(tmp_path / "out.yaml").data == config
    assert json.loads((tmp_path / "out.json").read_text(encoding="utf-8")) == config
    assert json.loads((tmp_path / "out.txt").read_text(encoding="utf-8")) == [1, "yes"]
    assert (tmp_path / "count.txt").read_text(encoding="utf-8") == "42"


def test_write_file_append_adds_to_the_end(run_yaml, tmp_path):
    (tmp_path / "log.txt").write_text("one\n", encoding="utf-8")
    result, _ = run_yaml(one_action({"type": "write_file", "path": "log.txt", "content": "two\n", "append": True},
                                    {"type": "write_file", "path": "new.txt", "content": "first\n", "append": True}))
    assert result.ending == "done"
    assert (tmp_path / "log.txt").read_text(encoding="utf-8") == "one\ntwo\n"
    assert (tmp_path / "new.txt").read_text(encoding="utf-8") == "first\n"


def test_write_file_onto_a_directory_fails_and_cleans_up(run_yaml, tmp_path):
    (tmp_path / "taken").mkdir()
    result, _ = run_yaml(one_action({"type": "write_file", "path": "taken", "content": "x"}))
    assert result.ending == "failed"
    assert "cannot write 'taken'" in result.message
    assert "directory" in result.message
    assert leftovers(tmp_path) == []
    assert (tmp_path / "taken").is_dir()


def test_write_file_through_a_symlink_inside_keeps_the_link(run_yaml, work):
    (work / "real.txt").write_text("old", encoding="utf-8")
    (work / "link.txt").symlink_to("real.txt")
    result, _ = run_yaml(one_action({"type": "write_file", "path": "link.txt", "content": "new"}), cwd=work)
    assert result.ending == "done"
    assert (work / "link.txt").is_symlink()
    assert (work / "real.txt").read_text(encoding="utf-8") == "new"


# --------------------------------------------------------------------------- #
# the working-directory guard

def test_write_file_refuses_dot_dot_escape(run_yaml, work, tmp_path):
    result, _ = run_yaml(one_action({"type": "write_file", "path": "../outside/x.txt", "content": "x"}), cwd=work)
    assert result.ending == "failed"
    assert "refusing to write '../outside/x.txt'" in result.message
    assert "outside the working directory" in result.message
    assert "'..'" in result.message
    assert not (tmp_path / "outside/x.txt").exists()


def test_create_directory_refuses_dot_dot_escape(run_yaml, work, tmp_path):
    result, _ = run_yaml(one_action({"type": "create_directory", "path": "../made/here"}), cwd=work)
    assert result.ending == "failed"
    assert "refusing to create '../made/here'" in result.message
    assert not (tmp_path / "made").exists()


def test_write_file_refuses_symlink_escape(run_yaml, work, tmp_path):
    (work / "door").symlink_to(tmp_path / "outside", target_is_directory=True)
    result, _ = run_yaml(one_action({"type": "write_file", "path": "door/x.txt", "content": "x"}), cwd=work)
    assert result.ending == "failed"
    assert "refusing to write 'door/x.txt'" in result.message
    assert "symbolic link" in result.message
    assert list((tmp_path / "outside").iterdir()) == []


def test_write_file_refuses_a_computed_absolute_path(run_yaml, work, tmp_path):
    target = tmp_path / "outside" / "x.txt"
    result, _ = run_yaml(one_action({"type": "write_file", "path": "${computed.target}", "content": "x"},
                                    initial_state={"computed": {"target": str(target)}}), cwd=work)
    assert result.ending == "failed"
    assert "comes from a `${...}` template" in result.message
    assert not target.exists()


def test_write_file_refuses_an_absolute_path_with_a_template_in_it(run_yaml, work, tmp_path):
    # Only a path the author wrote out in full is trusted; a `${...}` part could lead anywhere.
    path = str(tmp_path / "outside") + "/${computed.name}"
    result, _ = run_yaml(one_action({"type": "write_file", "path": path, "content": "x"},
                                    initial_state={"computed": {"name": "x.txt"}}), cwd=work)
    assert result.ending == "failed"
    assert "refusing to write" in result.message
    assert not (tmp_path / "outside/x.txt").exists()


def test_write_file_allows_a_computed_path_inside(run_yaml, work):
    result, _ = run_yaml(one_action({"type": "write_file", "path": "${computed.dir}/x.txt", "content": "x"},
                                    initial_state={"computed": {"dir": "sub"}}), cwd=work)
    assert result.ending == "done"
    assert (work / "sub/x.txt").read_text(encoding="utf-8") == "x"


def test_write_file_allows_an_absolute_path_written_in_the_workflow(run_yaml, work, tmp_path):
    target = tmp_path / "outside" / "x.txt"
    result, _ = run_yaml(one_action({"type": "write_file", "path": str(target), "content": "x"}), cwd=work)
    assert result.ending == "done"
    assert target.read_text(encoding="utf-8") == "x"


def test_delete_file_refuses_dot_dot_and_symlink_escapes(run_yaml, work, tmp_path):
    victim = tmp_path / "outside" / "keep.txt"
    victim.write_text("precious", encoding="utf-8")
    (work / "door").symlink_to(tmp_path / "outside", target_is_directory=True)
    for path, why in (("../outside/keep.txt", "'..'"), ("door/keep.txt", "symbolic link")):
        result, _ = run_yaml(one_action({"type": "delete_file", "path": path}), cwd=work)
        assert result.ending == "failed", path
        assert f"refusing to delete '{path}'" in result.message
        assert why in result.message
    assert victim.read_text(encoding="utf-8") == "precious"


def test_local_file_ops_write_is_guarded_too(run_yaml, work, tmp_path):
    result, _ = run_yaml(one_action({"type": "local_file_ops", "operation": "write", "path": "../outside/x",
                                     "content": "x"}), cwd=work)
    assert result.ending == "failed"
    assert "refusing to write" in result.message
    assert not (tmp_path / "outside/x").exists()


# --------------------------------------------------------------------------- #
# directories and deleting

def test_create_directory_makes_parents_and_accepts_existing(run_yaml, tmp_path):
    result, _ = run_yaml(one_action({"type": "create_directory", "path": "a/b/c"},
                                    {"type": "create_directory", "path": "a/b/c"}))
    assert result.ending == "done"
    assert (tmp_path / "a/b/c").is_dir()


def test_create_directory_over_a_file_fails(run_yaml, tmp_path):
    (tmp_path / "plain").write_text("x", encoding="utf-8")
    result, _ = run_yaml(one_action({"type": "create_directory", "path": "plain"}))
    assert result.ending == "failed"
    assert "cannot create directory 'plain'" in result.message


def test_delete_file_removes_and_tolerates_missing(run_yaml, tmp_path):
    (tmp_path / "gone.txt").write_text("x", encoding="utf-8")
    result, _ = run_yaml(one_action({"type": "delete_file", "path": "gone.txt"},
                                    {"type": "delete_file", "path": "gone.txt"},
                                    {"type": "delete_file", "path": "never-was.txt"}))
    assert result.ending == "done"
    assert not (tmp_path / "gone.txt").exists()


def test_delete_file_refuses_a_directory(run_yaml, tmp_path):
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder/inner.txt").write_text("x", encoding="utf-8")
    result, _ = run_yaml(one_action({"type": "delete_file", "path": "folder"}))
    assert result.ending == "failed"
    assert "'folder' is a directory; delete_file deletes files only" in result.message
    assert (tmp_path / "folder/inner.txt").exists()


def test_delete_file_removes_a_link_not_its_target(run_yaml, work, tmp_path):
    target = tmp_path / "outside" / "keep.txt"
    target.write_text("precious", encoding="utf-8")
    (work / "link").symlink_to(target)
    result, _ = run_yaml(one_action({"type": "delete_file", "path": "link"}), cwd=work)
    assert result.ending == "done"
    assert not os.path.lexists(work / "link")
    assert target.read_text(encoding="utf-8") == "precious"


def test_delete_file_allows_an_absolute_path_written_in_the_workflow(run_yaml, work, tmp_path):
    target = tmp_path / "outside" / "old.txt"
    target.write_text("x", encoding="utf-8")
    result, _ = run_yaml(one_action({"type": "delete_file", "path": str(target)}), cwd=work)
    assert result.ending == "done"
    assert not target.exists()


# --------------------------------------------------------------------------- #
# local_file_ops (v3)

def test_local_file_ops_every_operation(run_yaml, tmp_path):
    (tmp_path / "stale.txt").write_text("x", encoding="utf-8")
    result, _ = run_yaml(one_action(
        {"type": "local_file_ops", "operation": "mkdir", "path": "out"},
        {"type": "local_file_ops", "operation": "write", "path": "out/a.txt", "content": "alpha"},
        {"type": "local_file_ops", "operation": "read", "path": "out/a.txt", "store_as": "computed.a"},
        {"type": "local_file_ops", "operation": "delete", "path": "stale.txt"}))
    assert result.ending == "done"
    assert result.state["computed"]["a"] == "alpha"
    assert not (tmp_path / "stale.txt").exists()


@pytest.mark.parametrize("action, message", [
    ({"operation": "read", "path": "a.txt"}, "read needs `store_as`"),
    ({"operation": "write", "path": "a.txt"}, "write needs `content`"),
    ({"operation": "read", "path": "missing.txt", "store_as": "computed.a"}, "no such file"),
])
def test_local_file_ops_failures(run_yaml, tmp_path, action, message):
    (tmp_path / "a.txt").write_text("x", encoding="utf-8")
    result, _ = run_yaml(one_action({"type": "local_file_ops", **action}))
    assert result.ending == "failed"
    assert message in result.message


def test_file_types_declare_their_effects():
    registry = consequences()
    for name in ("read_file", "read_yaml", "read_json", "write_file", "create_directory", "delete_file",
                 "local_file_ops"):
        spec = registry.get(name)
        assert spec.effects == ("files",), name
        assert spec.idempotent, name


def test_list_files_globs_files_or_folders_from_the_working_directory(run_yaml, tmp_path):
    for name in ("docs/guide.md", "docs/api/index.md", "docs/api/notes.txt", "README.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    result, _ = run_yaml(one_action({"type": "list_files", "pattern": "docs/**/*.md", "store_as": "computed.pages"},
                                    {"type": "list_files", "pattern": "docs/*/", "store_as": "computed.folders"},
                                    {"type": "list_files", "pattern": "nothing/*", "store_as": "computed.none"}))
    assert result.ending == "done", result.message
    assert result.state["computed"]["pages"] == ["docs/api/index.md", "docs/guide.md"]
    assert result.state["computed"]["folders"] == ["docs/api"]
    assert result.state["computed"]["none"] == []


USER_LEVEL_SKILL = """\
name: user-level
version: "1"
start_node: scaffold
nodes:
  scaffold:
    type: action
    actions:
      - {type: create_directory, path: "${env.HOME}/.claude/skills/corpus-x"}
      - {type: write_file, path: "${env.HOME}/.claude/skills/corpus-x/SKILL.md", content: "# corpus-x\\n"}
    on_success: done
    on_failure: failed
endings:
  done: {type: success, message: made}
  failed: {type: failure, message: "${computed.last_error}"}
"""


def test_a_computed_path_outside_the_working_directory_is_written_only_in_a_folder_the_person_allows(tmp_path):
    # hiivmind-corpus init's "User-level skill (Recommended)": ~/.claude/skills/, named by a template.
    from conftest import wfexec_in_process as cli

    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    (work / "workflow.yaml").write_text(USER_LEVEL_SKILL)
    os.environ["HOME"], saved = str(home), os.environ.get("HOME")
    try:
        refused = cli("run", "workflow.yaml", "--ephemeral", cwd=work)
        assert refused.returncode == 1 and "--allow-write DIR" in refused.stdout + refused.stderr
        assert not home.exists()
        allowed = cli("run", "workflow.yaml", "--ephemeral", "--allow-write", home / ".claude" / "skills", cwd=work)
        assert (allowed.returncode, allowed.stdout.strip()) == (0, "made"), allowed.stderr
        assert (home / ".claude" / "skills" / "corpus-x" / "SKILL.md").read_text() == "# corpus-x\n"
        # Only that folder: a sibling is still refused.
        narrower = cli("run", "workflow.yaml", "--ephemeral", "--allow-write", home / ".claude" / "other", cwd=work)
        assert narrower.returncode == 1
    finally:
        if saved is None:
            del os.environ["HOME"]
        else:
            os.environ["HOME"] = saved
