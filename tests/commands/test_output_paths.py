"""A path a command is told to write (-o/--output, --junit, --dir, --record-case, --state-out) that cannot take
what it writes: one line naming the path and why, exit 2, no traceback, nothing changed; found before the
command's work where that work costs (`wfexec test --junit`, a run's `--record-case`).

Each test here printed a traceback (or, for --record-case, exited 0) before wfexec.system.files.write_output and
check_writable."""

from __future__ import annotations

import os

import pytest

from conftest import ROOT

QUICKSTART = ROOT / "skills" / "quickstart"
STATES = ROOT / "tests" / "workflows" / "temporal" / "review"  # a states folder: START.md


def _clean_error(done, *words: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


@pytest.fixture
def a_file(tmp_path):
    """A file where a folder is expected (as /etc/hostname was for the audit)."""
    plain = tmp_path / "plain.txt"
    plain.write_text("keep me\n")
    return plain


@pytest.mark.parametrize("args", [["schema", "-o"], ["expand", QUICKSTART, "-o"], ["graph", QUICKSTART, "-o"],
                                  ["convert", STATES, "-o"], ["test", QUICKSTART, "--junit"]],
                         ids=["schema", "expand", "graph", "convert", "test"])
def test_a_folder_given_for_a_file_is_said_to_be_one(cli, tmp_path, args):
    folder = tmp_path / "out"
    folder.mkdir()
    before = sorted(os.listdir(tmp_path))
    done = cli(*args, folder, cwd=tmp_path)
    _clean_error(done, f"cannot write {folder}: it is a folder", args[-1])
    assert sorted(os.listdir(tmp_path)) == before and not os.listdir(folder)  # not even a temporary file


@pytest.mark.parametrize("args", [["schema", "-o"], ["expand", QUICKSTART, "-o"], ["graph", QUICKSTART, "-o"],
                                  ["convert", STATES, "-o"]], ids=["schema", "expand", "graph", "convert"])
def test_a_file_under_a_file_is_said_to_be_so(cli, tmp_path, a_file, args):
    done = cli(*args, a_file / "deeper" / "out.txt", cwd=tmp_path)
    _clean_error(done, f"it is inside {a_file}, which is a file")
    assert a_file.read_text() == "keep me\n"


@pytest.mark.parametrize("args", [["docs", "-o"], ["new", "skill", "ok", "--dir"]], ids=["docs", "new-skill"])
def test_a_file_given_for_a_folder_is_said_to_be_one(cli, tmp_path, a_file, args):
    done = cli(*args, a_file, cwd=tmp_path)
    _clean_error(done, f"cannot write into {a_file}: it is a file, not a folder", args[-1])
    assert a_file.read_text() == "keep me\n"


def test_convert_to_a_folder_under_a_file_writes_nothing(cli, tmp_path, a_file):
    converted = tmp_path / "review.yaml"
    assert cli("convert", STATES, "-o", converted, cwd=tmp_path).returncode == 0
    done = cli("convert", converted, "-o", a_file / "review", cwd=tmp_path)
    _clean_error(done, f"cannot write into {a_file}: it is a file, not a folder")
    done = cli("convert", converted, "-o", tmp_path / "new" / "review", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(tmp_path / "new")) == ["review"]  # the scratch folder renamed, none left beside it
    assert os.listdir(tmp_path / "new" / "review") == ["START.md"]


def test_test_junit_that_cannot_be_written_is_found_before_the_cases_run(cli, tmp_path):
    done = cli("test", QUICKSTART, "--junit", tmp_path, cwd=tmp_path)
    _clean_error(done, f"cannot write {tmp_path}: it is a folder — give --junit a file path")
    assert "passed" not in done.stdout and not done.stdout.strip()  # nothing ran


def test_an_os_error_met_while_writing_names_the_path_and_what_the_os_said(tmp_path, monkeypatch):
    from wfexec.errors import CannotWrite
    from wfexec.system import files

    def refuse(path, content, encoding="utf-8"):
        raise PermissionError(13, "Permission denied", str(tmp_path / ".out.json.abc123.tmp"))

    monkeypatch.setattr(files, "write_atomic", refuse)
    with pytest.raises(CannotWrite) as caught:
        files.write_output(tmp_path / "out.json", "{}", option="-o")
    assert caught.value.message == f"cannot write {tmp_path / 'out.json'}: nothing can be made in {tmp_path} " \
                                   "(Permission denied)"
    assert "give -o a file path" in caught.value.hint


def test_record_case_that_cannot_be_written_is_refused_before_the_run(cli, tmp_path):
    done = cli("run", QUICKSTART, "--ephemeral", "--answer", "ask_mood=plain", "--record-case", tmp_path,
               cwd=tmp_path)
    _clean_error(done, f"--record-case {tmp_path} is a folder")
    assert "Hello" not in done.stdout  # the run did not start


def test_record_case_not_written_after_the_run_is_no_success(cli, tmp_path, monkeypatch):
    """Should the file become unusable during the run (the check before it passed), the command does not exit 0:
    2, as for the same file found before the run, because what is wrong is the FILE given on the command line."""
    from wfexec.commands import record_case

    monkeypatch.setattr(record_case, "case_file_problem", lambda file: None)
    done = cli("run", QUICKSTART, "--ephemeral", "--answer", "ask_mood=plain", "--record-case", tmp_path,
               cwd=tmp_path)
    assert "Hello" in done.stdout
    _clean_error(done, "error: the test case was not written")


def test_new_skill_in_a_folder_that_is_made_still_works(cli, tmp_path):
    done = cli("new", "skill", "ok", "--dir", tmp_path / "a" / "b", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "a" / "b" / "ok" / "workflow.yaml").is_file()


def test_unwritable_says_why_in_words_that_follow_it(tmp_path, a_file):
    from wfexec.system.files import unwritable

    assert unwritable(tmp_path) == "is a folder"
    assert unwritable(tmp_path / "new" / "x.json") is None
    assert unwritable(a_file) is None  # replaced as a whole
    assert unwritable(a_file / "x") == f"is inside {a_file}, which is a file"
    assert unwritable(a_file, folder=True) == "is a file, not a folder"
    assert unwritable(tmp_path, folder=True) is None
    if os.path.exists("/dev/null"):
        assert unwritable("/dev/null") == "is not a regular file (a device, pipe or socket)"
