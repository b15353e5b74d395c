"""Scopes and name resolution: checklist items 53–58, 87 and 88 of reference/raymond-state-protocol.md §4,
plus the zip rules of §1.9 and the security rules of issue 4 (zip paths, symlinks, private script files).

Windows resolution (`.bat`/`.ps1` preferred over `.md`) is not tested: wfexec runs `.sh` with bash; on
this platform `.bat`/`.ps1` give the wrong-platform errors of item 54, which are tested.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import zipfile

import pytest

from wfexec.protocol.errors import ScopeError
from wfexec.protocol.policy import parse_frontmatter
from wfexec.protocol.scopes import (DirectoryScope, ResolveError, ScriptFiles, entry_point, open_scope, resolve_state,
                                    state_kind)
from wfexec.protocol.yamlscope import inline_scope


def folder_with(tmp_path, *names):
    tmp_path.mkdir(parents=True, exist_ok=True)
    for name in names:
        (tmp_path / name).write_text("x")
    return DirectoryScope(tmp_path)


def test_item53_bare_names_find_md_or_sh_and_both_is_ambiguous(tmp_path):
    assert resolve_state(folder_with(tmp_path / "a", "POLL.md"), "POLL") == "POLL.md"
    assert resolve_state(folder_with(tmp_path / "b", "POLL.sh"), "POLL") == "POLL.sh"
    with pytest.raises(ResolveError, match="ambiguous.*POLL.md and POLL.sh"):
        resolve_state(folder_with(tmp_path / "c", "POLL.md", "POLL.sh"), "POLL")
    # An explicit extension settles it.
    assert resolve_state(DirectoryScope(tmp_path / "c"), "POLL.sh") == "POLL.sh"


def test_item54_wrong_platform_and_missing_explicit(tmp_path):
    with pytest.raises(ResolveError, match="only as POLL.bat, which does not run on Unix"):
        resolve_state(folder_with(tmp_path / "a", "POLL.bat"), "POLL")
    with pytest.raises(ResolveError, match="POLL.bat and POLL.ps1"):
        resolve_state(folder_with(tmp_path / "b", "POLL.bat", "POLL.ps1"), "POLL")
    with pytest.raises(ResolveError, match="does not run on Unix"):
        resolve_state(folder_with(tmp_path / "c", "POLL.bat"), "POLL.bat")
    with pytest.raises(ResolveError, match="'X.md' not found"):
        resolve_state(folder_with(tmp_path / "d", "X.sh"), "X.md")
    with pytest.raises(ResolveError, match=r"not found.*looked for NOPE.md, NOPE.sh"):
        resolve_state(folder_with(tmp_path / "e", "X.sh"), "NOPE")


def test_item55_yaml_scopes_strip_extensions_directories_do_not(tmp_path):
    path = tmp_path / "flow.yaml"
    path.write_text("states:\n  REVIEW:\n    sh: echo '<result>ok</result>'\n")
    scope = open_scope(path)
    assert resolve_state(scope, "REVIEW.md") == "REVIEW.sh"
    assert resolve_state(scope, "REVIEW") == "REVIEW.sh"
    with pytest.raises(ResolveError):
        resolve_state(folder_with(tmp_path / "dir", "REVIEW.sh"), "REVIEW.md")


def test_a_dotted_name_is_a_file_name_in_folders_and_zips_and_a_state_name_in_yaml(tmp_path):
    """prompts.ResolveState: in a folder or a zip, `filepath.Ext("my.state")` is `.state`, so the name is looked up as
    written (`State file not found`), never as my.state.md or my.state.sh; a YAML scope drops only a recognised
    extension, so there `my.state` is the state of that name."""
    folder = folder_with(tmp_path / "dir", "my.state.sh", "v1.2.md", "notes.txt", "notes.txt.md")
    for name, written in (("my.state", "my.state.sh"), ("v1.2", "v1.2.md")):
        with pytest.raises(ResolveError, match=f"'{re.escape(name)}' not found.*looked up as written") as caught:
            resolve_state(folder, name)
        assert written in caught.value.hint
    assert resolve_state(folder, "my.state.sh") == "my.state.sh"
    with pytest.raises(ResolveError, match="'notes.txt' .* is not a state"):  # the file as written, not notes.txt.md
        resolve_state(folder, "notes.txt")
    archive = tmp_path / "flow.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("START.sh", "echo")
        zipped.writestr("my.state.sh", "echo")
    with pytest.raises(ResolveError, match="'my.state' not found"):
        resolve_state(open_scope(archive), "my.state")
    path = tmp_path / "flow.yaml"
    path.write_text("states:\n  my.state:\n    sh: echo '<result>ok</result>'\n")
    assert resolve_state(open_scope(path), "my.state") == resolve_state(open_scope(path), "my.state.md") \
        == "my.state.sh"


@pytest.mark.parametrize("name", ["a/b", "../x", "a\\b", "..", ""])
def test_item56_paths_are_rejected_everywhere(tmp_path, name):
    for scope in (folder_with(tmp_path, "x.md"), inline_scope({"x.md": "hi"}, "inline", tmp_path)):
        with pytest.raises(ResolveError):
            resolve_state(scope, name)


def test_item58_entry_point(tmp_path):
    assert entry_point(folder_with(tmp_path / "a", "1_START.md", "OTHER.md")) == "1_START.md"
    assert entry_point(folder_with(tmp_path / "b", "START.sh")) == "START.sh"
    with pytest.raises(ScopeError, match="ambiguous entry point"):
        entry_point(folder_with(tmp_path / "c", "1_START.md", "START.md"))
    with pytest.raises(ScopeError, match="no entry point"):
        entry_point(folder_with(tmp_path / "d", "OTHER.md"))
    with pytest.raises(ScopeError, match="ambiguous"):
        entry_point(folder_with(tmp_path / "e", "1_START.md", "1_START.sh"))
    # wfexec's extension: with no exact name, `start.md` in any letter case is the entry point.
    assert entry_point(folder_with(tmp_path / "f", "start.md", "done.md")) == "start.md"
    assert entry_point(folder_with(tmp_path / "g", "Start.sh", "START.md")) == "START.md"  # exact wins
    with pytest.raises(ScopeError, match="ambiguous"):
        entry_point(folder_with(tmp_path / "h", "start.md", "Start.sh"))


def test_state_kind():
    assert state_kind("A.md") == state_kind("A.MD") == "markdown"
    assert state_kind("A.sh") == "script"
    with pytest.raises(ResolveError, match="not a state"):
        state_kind("notes.txt")


def test_a_bare_name_matching_a_non_state_file_explains(tmp_path):
    with pytest.raises(ResolveError, match="is not a state"):
        resolve_state(folder_with(tmp_path, "NOTES"), "NOTES")


# -- Raymond YAML scopes (items 87, 88) -------------------------------------------------

@pytest.mark.parametrize("text,message", [
    ("name: x\n", "has no states"),
    ("states: {}\n", "has no states"),
    ("states:\n", "has no states"),
    ("states:\n  A: {prompt: hi, sh: echo}\n", "both `prompt` and `sh`"),
    ("states:\n  A: {description: nothing}\n", "neither"),
    ("states:\n  A: {sh: echo, model: opus}\n", "is a script and cannot have `model`"),
    ("states:\n  A: {sh: echo, allowed_transitions: []}\n", "cannot have `allowed_transitions`"),
    ("states:\n  A: {sh: echo, effort: high}\n", "cannot have `effort`"),
    ("states:\n  A: {sh: echo, force_implicit: true}\n", "cannot have `force_implicit`"),
    ("states:\n  'a/b': {sh: echo}\n", "path separator"),
    ("states:\n  '': {sh: echo}\n", "empty name"),
    ("states:\n  A: {sh: echo}\n  A: {sh: echo}\n", "duplicate|twice|more than once"),
    ("states:\n  A: {sh: echo, timeout: -1}\n", "timeout"),
    ("START: {prompt: hi}\n", "wrap the states in `states:`"),
    # Raymond decodes a state's policy with the file ([]map[string]string): the text form of an entry is an error.
    ("states:\n  A:\n    prompt: hi\n    allowed_transitions:\n      - result\n",
     "state 'A' (line 5): entry 1 of `allowed_transitions` is the text 'result', not a mapping"),
    ("states:\n  A: {prompt: hi, force_implicit: maybe}\n", "`force_implicit` must be true or false"),
])
def test_item87_yaml_validation_errors(tmp_path, text, message):
    path = tmp_path / "flow.yaml"
    path.write_text(text)
    with pytest.raises(ScopeError) as caught:
        open_scope(path)
    assert any(part in str(caught.value) for part in message.split("|")), str(caught.value)


def test_item87_yaml_accepts_unknown_keys_manifest_keys_and_yml(tmp_path):
    path = tmp_path / "flow.yml"
    path.write_text("id: demo\nname: Demo\ndescription: d\nbackend: pi\nstates:\n"
                    "  START: {sh: \"echo '<result>ok</result>'\", colour: blue}\n")
    scope = open_scope(path)
    assert scope.names() == ["START.sh"]
    assert any("colour" in w for w in scope.warnings)


def test_item88_virtual_files(tmp_path):
    path = tmp_path / "flow.yaml"
    path.write_text("states:\n"
                    "  REVIEW:\n    prompt: Review it.\n    model: opus\n    colour: blue\n"
                    "    allowed_transitions: [{tag: result, payload: OK}]\n"
                    "  BUILD:\n    sh: make\n    ps1: build.ps1\n    bat: build.bat\n    timeout: 0\n"
                    "  PLAIN:\n    prompt: |\n      Just this.\n"
                    "  DASHES:\n    prompt: \"---\\nnot frontmatter\\n---\\n\"\n")
    scope = open_scope(path)
    assert scope.names() == ["REVIEW.md", "BUILD.sh", "BUILD.ps1", "BUILD.bat", "PLAIN.md", "DASHES.md"]
    policy, body = parse_frontmatter(scope.read_text("REVIEW.md"))
    assert (policy.model, policy.allowed, policy.unknown, body) == ("opus", ({"tag": "result", "payload": "OK"},),
                                                                    ("colour",), "Review it.")
    assert scope.read_text("PLAIN.md") == "Just this.\n"
    assert parse_frontmatter(scope.read_text("DASHES.md")) == (None, "---\nnot frontmatter\n---\n")
    assert scope.timeout("BUILD.sh")[0] == 0


# -- zip scopes ---------------------------------------------------------------------------

def make_zip(path, members: dict, symlink: str | None = None):
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, "/etc/passwd")
    return path


def test_zip_flat_and_single_folder_layouts(tmp_path):
    flat = open_scope(make_zip(tmp_path / "flat.zip", {"START.md": "hi", "NEXT.sh": "echo"}))
    assert sorted(flat.names()) == ["NEXT.sh", "START.md"] and entry_point(flat) == "START.md"
    folder = open_scope(make_zip(tmp_path / "one.zip", {"flow/START.sh": "echo", "flow/": ""}))
    assert folder.names() == ["START.sh"]


@pytest.mark.parametrize("members,symlink,message", [
    ({}, None, "is empty"),
    ({"/etc/START.md": "x"}, None, "absolute"),
    ({"../START.md": "x"}, None, "leaves the archive"),
    ({"a/../START.md": "x"}, None, "leaves the archive|nests"),
    ({"START.md": "x"}, "LINK.md", "symbolic link"),
    ({"a/START.md": "x", "b/NEXT.md": "x"}, None, "several top-level folders"),
    ({"START.md": "x", "sub/NEXT.md": "x"}, None, "mixes files"),
    ({"a/b/START.md": "x"}, None, "too deeply"),
])
def test_zip_rejects_unsafe_or_odd_layouts(tmp_path, members, symlink, message):
    path = make_zip(tmp_path / "bad.zip", members, symlink)
    with pytest.raises(ScopeError) as caught:
        open_scope(path)
    assert any(part in str(caught.value) for part in message.split("|")), str(caught.value)


def test_zip_hash_in_the_name_must_match(tmp_path):
    source = make_zip(tmp_path / "tmp.zip", {"START.md": "hi"})
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    good = tmp_path / f"flow-{digest}.zip"
    source.rename(good)
    assert open_scope(good).names() == ["START.md"]
    bad = tmp_path / f"flow-{'0' * 64}.zip"
    bad.write_bytes(good.read_bytes())
    with pytest.raises(ScopeError, match="does not match the SHA-256"):
        open_scope(bad)
    longer = tmp_path / f"flow-{'a' * 65}.zip"
    longer.write_bytes(good.read_bytes())
    with pytest.raises(ScopeError, match="ambiguous hash"):
        open_scope(longer)


def test_scripts_of_virtual_scopes_run_from_a_private_temp_file(tmp_path):
    scope = inline_scope({"START.sh": "echo hi\n"}, "inline", tmp_path)
    files = ScriptFiles()
    try:
        path = scope.script_path("START.sh", files)
        assert path.read_text() == "echo hi\n"
        assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o700
        assert scope.script_path("START.sh", files) == path  # written once per run
    finally:
        files.cleanup()
    assert not path.exists()
    # A directory scope runs its own files in place.
    folder = folder_with(tmp_path / "d", "A.sh")
    assert folder.script_path("A.sh", ScriptFiles()) == (tmp_path / "d" / "A.sh").resolve()


def test_inline_scopes_take_files_or_state_objects(tmp_path):
    scope = inline_scope({"START.sh": "echo", "REVIEW": {"prompt": "Look.", "model": "haiku"}}, "node x", tmp_path)
    assert scope.names() == ["START.sh", "REVIEW.md"]
    assert resolve_state(scope, "START") == "START.sh"
    assert parse_frontmatter(scope.read_text("REVIEW.md"))[0].model == "haiku"
    with pytest.raises(ScopeError, match="needs an extension"):
        inline_scope({"START": "echo"}, "node x", tmp_path)
    with pytest.raises(ScopeError, match="defined twice"):
        inline_scope({"START.sh": "echo", "START": {"sh": "echo"}}, "node x", tmp_path)


def test_open_scope_errors(tmp_path):
    with pytest.raises(ScopeError, match="does not exist"):
        open_scope(tmp_path / "missing")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ScopeError, match="not a states folder"):
        open_scope(tmp_path / "notes.txt")
    (tmp_path / "broken.zip").write_text("not a zip")
    with pytest.raises(ScopeError, match="not a readable zip"):
        open_scope(tmp_path / "broken.zip")
