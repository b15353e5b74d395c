"""The compiled-workflow cache (wfexec/language/workflow_cache.py, wfexec/system/cache.py): a second command on an
unchanged workflow reuses the first one's compile; any edit to anything the workflow reads is noticed; a corrupt
entry, an unwritable cache or a cache turned off change nothing but speed. Real `wfexec` processes, a real cache
folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest

from conftest import with_coverage

WORKFLOW = """
name: cached
version: 1
start_node: greet
imports: {words: words.yaml}
nodes:
  greet:
    type: action
    actions: [{type: set_state, field: computed.word, value: "${imports.words.greeting}"}]
    on_success: agents
  agents:
    type: states
    folder: flow
    store_as: computed.said
    on_success: child
  child:
    type: reference
    workflow: child.yaml
    next_node: done
endings:
  done: {type: success, message: "${computed.word} ${computed.said}"}
"""
CHILD = """
name: child
version: 1
start_node: finish
nodes:
  finish: {type: action, actions: [{type: set_flag, flag: x}], on_success: ok}
endings:
  ok: {type: success, message: child done}
"""


def project(folder: Path) -> Path:
    (folder / "flow").mkdir(parents=True)
    (folder / "workflow.yaml").write_text(dedent(WORKFLOW))
    (folder / "words.yaml").write_text("greeting: hello\n")
    (folder / "child.yaml").write_text(dedent(CHILD))
    (folder / "flow" / "START.sh").write_text("echo '<result>there</result>'\n")
    return folder


def wfexec(folder: Path, cache: Path | None, *args: str, **env: str):
    environment = with_coverage({**os.environ, **env})
    environment.pop("WFEXEC_NO_CACHE", None)
    if cache is not None:
        environment["WFEXEC_CACHE_DIR"] = str(cache)
    environment.update(env)
    return subprocess.run([sys.executable, "-m", "wfexec", *args], cwd=folder, env=environment,
                          capture_output=True, text=True, timeout=120)


def entries(cache: Path) -> list[Path]:
    return sorted((cache / "workflows").glob("*.bin")) if (cache / "workflows").is_dir() else []


def test_the_second_run_uses_the_cached_compile_and_gives_the_same_result(tmp_path):
    folder, cache = project(tmp_path / "p"), tmp_path / "cache"
    first = wfexec(folder, cache, "run", ".", "--ephemeral", "--format", "json")
    assert first.returncode == 0, first.stderr
    [entry] = entries(cache)
    stamp = entry.stat().st_ino
    second = wfexec(folder, cache, "run", ".", "--ephemeral", "--format", "json")
    assert second.returncode == 0, second.stderr
    assert entries(cache) == [entry] and entry.stat().st_ino == stamp  # read, not written again
    strip = lambda text: "\n".join(line for line in text.splitlines()  # noqa: E731 - what differs run to run
                                    if '"at"' not in line and '"workflow_id"' not in line)
    assert strip(second.stdout) == strip(first.stdout) and '"message": "hello there"' in second.stdout
    assert wfexec(folder, cache, "validate", ".").stderr == wfexec(folder, None, "validate", ".",
                                                                    WFEXEC_NO_CACHE="1").stderr


@pytest.mark.parametrize("edit", ["workflow.yaml", "words.yaml", "child.yaml", "flow", "new plugin root"])
def test_an_edit_to_anything_the_workflow_reads_is_not_served_from_the_cache(tmp_path, edit):
    folder, cache = project(tmp_path / "p"), tmp_path / "cache"
    assert wfexec(folder, cache, "run", ".", "--ephemeral").returncode == 0
    if edit == "workflow.yaml":
        (folder / edit).write_text(dedent(WORKFLOW).replace("${computed.said}", "${computed.said}!"))
    elif edit == "words.yaml":
        (folder / edit).write_text("greeting: bonjour\n")
    elif edit == "child.yaml":
        (folder / edit).write_text(dedent(CHILD).replace("on_success: ok", "on_success: nowhere"))
    elif edit == "flow":
        (folder / "flow" / "START.sh").unlink()  # the states folder has no START any more
        (folder / "flow" / "BEGIN.sh").write_text("echo '<result>moved</result>'\n")
    else:  # a plugin manifest above the workflow: imports now resolve from there first
        (tmp_path / ".claude-plugin").mkdir()
        (tmp_path / ".claude-plugin" / "plugin.json").write_text("{}")
        (tmp_path / "words.yaml").write_text("greeting: howdy\n")
    again = wfexec(folder, cache, "run", ".", "--ephemeral")
    fresh = wfexec(folder, None, "run", ".", "--ephemeral", WFEXEC_NO_CACHE="1")
    assert (again.returncode, again.stdout, again.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)
    expected = {"workflow.yaml": "hello there!", "words.yaml": "bonjour there", "new plugin root": "howdy there"}
    if edit in expected:
        assert again.stdout.strip() == expected[edit]
    if edit == "child.yaml":
        assert again.returncode == 2 and "nowhere" in again.stderr
    if edit == "flow":
        assert again.returncode != 0


def test_a_corrupt_or_truncated_entry_is_ignored_and_replaced(tmp_path):
    folder, cache = project(tmp_path / "p"), tmp_path / "cache"
    assert wfexec(folder, cache, "run", ".", "--ephemeral").returncode == 0
    [entry] = entries(cache)
    whole = entry.read_bytes()
    for damaged in (whole[: len(whole) // 2], whole[:-1] + bytes([whole[-1] ^ 1]), b"", b"garbage"):
        entry.write_bytes(damaged)
        done = wfexec(folder, cache, "run", ".", "--ephemeral")
        assert (done.returncode, done.stdout.strip()) == (0, "hello there"), done.stderr
        assert entry.read_bytes() == whole  # rebuilt whole
    assert "Traceback" not in done.stderr


def test_an_unwritable_or_disabled_cache_changes_nothing_but_speed(tmp_path):
    folder = project(tmp_path / "p")
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder would be")
    done = wfexec(folder, blocked, "run", ".", "--ephemeral")
    assert (done.returncode, done.stdout.strip()) == (0, "hello there"), done.stderr
    off = tmp_path / "off"
    done = wfexec(folder, off, "run", ".", "--ephemeral", WFEXEC_NO_CACHE="1")
    assert done.returncode == 0 and not off.exists()


def _shape(value, seen=None):
    """Everything a compiled workflow holds, as plain data: what a cached copy must hold too."""
    import dataclasses
    import enum

    from wfexec import records
    from wfexec.language.expressions import Expression, Template
    from wfexec.nodes.base import NodeType

    seen = seen if seen is not None else set()
    if isinstance(value, NodeType):
        return ("node type", value.name)
    if isinstance(value, Expression):
        return ("expression", value.source, value.code, value.names, value.program, value.reads,
                value.function_text(), value._fast_text)
    if isinstance(value, Template):
        return ("template", value.source, _shape(value.parts, seen))
    # The compiled workflow's classes are wfexec.records (plain data classes for start-up), a plugin's may be
    # dataclasses.
    is_data = dataclasses.is_dataclass(value) or records.is_record(value)
    if callable(value) and not is_data:
        return ("callable", getattr(value, "__module__", ""), getattr(value, "__qualname__", repr(value)))
    if is_data and not isinstance(value, type):
        if id(value) in seen:
            return ("seen", type(value).__name__)
        seen.add(id(value))
        shown = records.fields(value) if records.is_record(value) else dataclasses.fields(value)
        return (type(value).__name__, tuple((f.name, _shape(getattr(value, f.name), seen)) for f in shown))
    if isinstance(value, dict):
        return ("dict", tuple((_shape(k, seen), _shape(v, seen)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_shape(v, seen) for v in value))
    if isinstance(value, (str, int, float, bool, type(None), Path, enum.Enum)):
        return value
    slots = getattr(type(value), "__slots__", None)
    if slots:
        return (type(value).__name__, tuple((s, _shape(getattr(value, s, None), seen)) for s in slots))
    return (type(value).__name__, _shape(vars(value), seen))


def _valid_workflows():
    from conftest import ROOT

    found = sorted(ROOT.glob("skills/*/workflow.yaml")) + [ROOT / "tests/workflows/valid/every_node/workflow.yaml"]
    compat = Path(os.environ.get("WFEXEC_COMPAT", ROOT.parent / "shared" / "compat")) / "hiivmind-corpus"
    if compat.is_dir():
        found += sorted(compat.glob("*/skills/*/workflow.yaml")) + sorted(compat.glob("*/commands/*/workflow.yaml"))
    return found


def test_a_cached_compile_holds_exactly_what_a_fresh_one_does():
    """Over the example skills and every real hiivmind workflow that loads without errors: the object read back
    from the cache is the compiled workflow, field for field (the types' changed effects included)."""
    import pickle

    from wfexec.language.compiler import check_document
    from wfexec.language.diagnostics import has_errors
    from wfexec.language.loader import load_file

    compared = 0
    for path in _valid_workflows():
        checked = check_document(load_file(path))
        if checked.workflow is None or has_errors(checked.diagnostics):
            continue
        again = pickle.loads(pickle.dumps(checked))
        assert _shape(again) == _shape(checked), path
        assert again.summary == checked.summary, path
        compared += 1
    assert compared >= 5


def test_the_workflow_digest_is_made_when_a_run_asks_and_is_the_one_runs_recorded_before(tmp_path, monkeypatch):
    """A run's journal records the workflow's digest (`source_hash`) and a Temporal worker compares it with the
    client's. Checking a workflow no longer makes it (validating a big file spent about 3% of its time on it):
    it is made on first use, the same from a compile read back from the cache as from a fresh one, and the same
    value the eager digest gave for this workflow."""
    import pickle

    from wfexec.language.compiler import check_document
    from wfexec.language.loader import load_file

    monkeypatch.chdir(tmp_path)
    folder = project(tmp_path / "p")
    checked = check_document(load_file(folder / "workflow.yaml"))
    workflow = checked.workflow
    assert workflow is not None and workflow.known_hash is None  # checking made none
    cached = pickle.loads(pickle.dumps(checked)).workflow
    assert cached.source_hash == workflow.source_hash == "ef402b28e8ef7963"
    assert workflow.known_hash == "ef402b28e8ef7963"  # made once, then kept


def test_the_cache_keeps_a_bounded_number_of_entries_and_the_recently_used_ones(tmp_path, monkeypatch):
    from wfexec.system import cache

    monkeypatch.setenv("WFEXEC_CACHE_DIR", str(tmp_path / "cache"))
    cache.store("things", b"favourite", b"kept")
    for index in range(cache.MAX_ENTRIES + 40):
        cache.store("things", f"entry {index}".encode(), b"x")
        if index % 50 == 0:
            assert cache.load("things", b"favourite") == b"kept"  # used again and again
    left = list((tmp_path / "cache" / "things").glob("*.bin"))
    assert len(left) <= cache.MAX_ENTRIES
    assert cache.load("things", b"favourite") == b"kept"
    assert cache.load("things", b"entry 0") is None  # the oldest went first


def test_compiles_in_two_threads_at_once_each_record_the_places_they_looked_at(tmp_path):
    """What a `wfexec worker` does (its runs' workflow code and steps load workflows in many threads): one compile
    ending while another is under way must neither break the other nor leave it with another's list of places
    (a cache entry that misses the files it depends on would be served after they changed)."""
    import threading

    from wfexec.language.compiler import check_document, recording_lookups
    from wfexec.language.loader import load_file

    first, second = project(tmp_path / "first"), project(tmp_path / "second")
    opened, go = threading.Event(), threading.Event()
    seen: dict = {}

    def other_thread() -> None:
        try:
            with recording_lookups() as looked:
                opened.set()
                go.wait(30)
                check_document(load_file(second / "workflow.yaml"))
            seen["looked"] = looked
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            seen["error"] = exc

    with recording_lookups() as mine:
        thread = threading.Thread(target=other_thread)
        thread.start()
        assert opened.wait(30)
        check_document(load_file(first / "workflow.yaml"))
    go.set()
    thread.join(60)
    assert "error" not in seen, repr(seen.get("error"))
    assert first / "words.yaml" in mine and not any(second in place.parents for place in mine)
    assert second / "words.yaml" in seen["looked"] and not any(first in place.parents for place in seen["looked"])


def _digest_by_glob(folder: Path) -> str:
    """How a folder's digest was made before it was walked with os.walk: the reference it must still equal."""
    from wfexec.system.digest import sha256

    whole = sha256(b"folder\0")
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        whole.update(str(file.relative_to(folder)).encode() + b"\0" + sha256(file.read_bytes()).digest())
    return whole.hexdigest()


def test_a_folder_digest_is_what_the_glob_made(tmp_path):
    """Entries made before keep their meaning: the same files (dot files, nested folders, links to files; not what
    a link to a folder or a broken link leads to) in the same order (part by part: `a/b` before `a-b/x`)."""
    from wfexec.language.workflow_cache import digest

    folder = tmp_path / "flow"
    for name, text in (("START.sh", "echo"), (".hidden", "h"), ("a/b", "1"), ("a-b/x", "2"), ("a/c/d.md", "3"),
                       ("é/ü.txt", "4")):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "far.sh").write_text("far")
    (folder / "linked-file").symlink_to(folder / "a" / "b")
    (folder / "linked-folder").symlink_to(tmp_path / "outside")
    (folder / "broken").symlink_to(tmp_path / "nowhere")
    before = digest(folder)
    assert before == _digest_by_glob(folder)
    (folder / "a" / "c" / "d.md").write_text("changed")
    assert digest(folder) == _digest_by_glob(folder) != before
    assert digest(tmp_path / "nowhere") == "missing"
    assert digest(str(folder / "START.sh")) == digest(folder / "START.sh") != "missing"


def test_a_cache_entry_writes_each_key_and_short_value_once_however_many_nodes_repeat_it(tmp_path):
    """The keys and short values every node repeats (`type: action`, `on_success`, a shared target) are one object
    each once loaded, so the entry holds each once and refers back to it: an entry grows with what the nodes say
    that differs, not with the words they share."""
    import pickle

    from wfexec.language.compiler import check_document
    from wfexec.language.loader import load_file

    nodes = "".join(f"  n{i}:\n    type: action\n    actions: [{{type: set_flag, flag: seen}}]\n"
                    f"    on_success: {'n' + str(i + 1) if i < 49 else 'done'}\n    on_failure: failed\n"
                    for i in range(50))
    path = tmp_path / "workflow.yaml"
    path.write_text(f"name: many\nversion: 1\nstart_node: n0\nnodes:\n{nodes}"
                    "endings:\n  done: {type: success, message: ok}\n  failed: {type: error, message: no}\n")
    checked = check_document(load_file(path))
    assert checked.workflow is not None
    entry = pickle.dumps(checked, protocol=pickle.HIGHEST_PROTOCOL)
    for word in (b"on_success", b"on_failure", b"set_flag", b"seen"):
        assert entry.count(word) == 1, word


def test_a_cache_entry_holds_each_name_look_up_as_one_line_and_runs_as_the_fresh_compile_does(tmp_path):
    """Each expression's Python fast path is kept in the entry with a name's look-up (and each guard and return)
    as one line, written out in full only when a run first evaluates it: written out, they were most of a big
    workflow's entry (1.1 KB a node of a chain of `compute` steps, 56 MB at 50,000 nodes)."""
    import pickle

    import wfexec
    from wfexec.language.compiler import check_document
    from wfexec.language.loader import load_file

    count = 40
    nodes = "".join(f"  n{i}:\n    type: action\n    actions:\n"
                    f"      - {{type: compute, expression: 'len(items) + {i}', store_as: computed.c{i}}}\n"
                    f"    on_success: {'n' + str(i + 1) if i < count - 1 else 'done'}\n    on_failure: failed\n"
                    for i in range(count))
    path = tmp_path / "workflow.yaml"
    path.write_text(f"name: chain\nversion: 1\nstart_node: n0\ninitial_state: {{items: [a, b]}}\nnodes:\n{nodes}"
                    "endings:\n  done: {type: success, message: ok}\n  failed: {type: error, message: no}\n")
    checked = check_document(load_file(path))
    entry = pickle.dumps(checked, protocol=pickle.HIGHEST_PROTOCOL)
    assert entry.count(b"scope.lookup") == 0
    assert entry.count(b"LOOKUP v1 'items'") == count
    assert len(entry) / count < 650  # bytes a node: 510 here, 1,116 with every look-up and guard written out

    result = wfexec.run(pickle.loads(entry).workflow, ephemeral=True)
    assert result.ending == "done"
    assert [result.state["computed"][f"c{i}"] for i in range(count)] == [2 + i for i in range(count)]
