"""git consequences against real repositories made in tmp_path (no network)."""

from __future__ import annotations

import subprocess
import textwrap
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from wfexec.types.registry import consequences

WORKFLOW = """\
name: git-test
version: "1.0"
start_node: act
nodes:
  act:
    type: action
    actions:
ACTIONS
    on_success: done
    on_failure: failed
endings:
  done:
    type: success
    message: ok
  failed:
    type: failure
    message: "${computed.last_error}"
"""


def workflow(actions: str) -> str:
    return WORKFLOW.replace("ACTIONS", textwrap.indent(textwrap.dedent(actions).strip(), " " * 6))


@pytest.fixture(autouse=True)
def isolated_git(monkeypatch):
    """Commits need an identity; the user's own git config must not change the outcome."""
    for name in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{name}_NAME", "Test")
        monkeypatch.setenv(f"GIT_{name}_EMAIL", "test@example.com")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def git(*args, cwd) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def commit(repo, name: str, text: str) -> str:
    (repo / name).write_text(text)
    git("add", name, cwd=repo)
    git("commit", "-q", "-m", f"add {name}", cwd=repo)
    return git("rev-parse", "HEAD", cwd=repo)


@pytest.fixture
def origin(tmp_path):
    """A repository with two commits on main and a tag on the first."""
    repo = tmp_path / "origin"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    commit(repo, "README.md", "first\n")
    git("tag", "-a", "v1", "-m", "version 1", cwd=repo)
    commit(repo, "second.txt", "second\n")
    return repo


@pytest.fixture
def work(tmp_path):
    """The run's working directory, apart from the origin."""
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


def clone(origin, work, name="clone") -> object:
    git("clone", "-q", str(origin), name, cwd=work)
    return work / name


# -- clone_repo ------------------------------------------------------------------

def test_clone_repo_is_shallow_by_default_and_stores_the_sha(run_yaml, origin, work):
    result, _ = run_yaml(workflow(f"""
        - type: clone_repo
          url: {origin.as_uri()}
          dest: .source/origin
          store_as: computed.sha
    """), cwd=work)
    assert result.type == "success", result.message
    dest = work / ".source" / "origin"
    assert (dest / "second.txt").read_text() == "second\n"
    assert git("rev-list", "--count", "HEAD", cwd=dest) == "1"
    assert result.state["computed"]["sha"] == git("rev-parse", "HEAD", cwd=origin)


def test_clone_repo_depth_zero_keeps_all_history(run_yaml, origin, work):
    result, _ = run_yaml(workflow(f"""
        - type: clone_repo
          url: {origin.as_uri()}
          dest: full
          depth: 0
    """), cwd=work)
    assert result.type == "success", result.message
    assert git("rev-list", "--count", "HEAD", cwd=work / "full") == "2"


def test_clone_repo_checks_out_the_branch(run_yaml, origin, work):
    git("checkout", "-q", "-b", "feature", cwd=origin)
    feature_sha = commit(origin, "feature.txt", "feature\n")
    git("checkout", "-q", "main", cwd=origin)
    result, _ = run_yaml(workflow(f"""
        - type: clone_repo
          url: {origin}
          dest: feature-clone
          branch: feature
        - type: get_sha
          repo_path: feature-clone
          store_as: computed.sha
    """), cwd=work)
    assert result.type == "success", result.message
    assert (work / "feature-clone" / "feature.txt").exists()
    assert result.state["computed"]["sha"] == feature_sha


def test_clone_repo_refuses_a_non_empty_destination(run_yaml, origin, work):
    (work / "taken").mkdir()
    (work / "taken" / "mine.txt").write_text("keep me")
    result, _ = run_yaml(workflow(f"""
        - type: clone_repo
          url: {origin}
          dest: taken
    """), cwd=work)
    assert result.type == "failure"
    assert "clone_repo failed: cannot clone into 'taken'" in result.message
    assert result.state["computed"]["last_error"] == result.message
    assert sorted(p.name for p in (work / "taken").iterdir()) == ["mine.txt"]


def test_clone_repo_into_an_existing_empty_folder(run_yaml, origin, work):
    (work / "empty").mkdir()
    result, _ = run_yaml(workflow(f"""
        - type: clone_repo
          url: {origin}
          dest: empty
    """), cwd=work)
    assert result.type == "success", result.message
    assert (work / "empty" / "README.md").exists()


def test_clone_repo_reports_git_error_and_leaves_nothing(run_yaml, tmp_path, work):
    missing = tmp_path / "no-such-repo"
    result, _ = run_yaml(workflow(f"""
        - type: clone_repo
          url: {missing}
          dest: out
    """), cwd=work)
    assert result.type == "failure"
    assert "does not exist" in result.message
    assert "fatal:" in result.message
    assert not (work / "out").exists()


def test_clone_repo_never_reads_the_url_as_an_option(run_yaml, work):
    result, _ = run_yaml(workflow("""
        - type: clone_repo
          url: "--upload-pack=touch pwned"
          dest: out
    """), cwd=work)
    assert result.type == "failure"
    # Read as a repository name (after `--`), not as git's --upload-pack option.
    assert "repository '--upload-pack=touch pwned' does not exist" in result.message
    assert not (work / "pwned").exists()


class GitServer(BaseHTTPRequestHandler):
    """/slow/... never answers in time; /private/... asks for a password."""

    def do_GET(self):
        if self.path.startswith("/private/"):
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="private"')
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self.server.stop.wait(30)

    def log_message(self, *args):
        pass


@pytest.fixture
def git_server(monkeypatch):
    for helper in ("GIT_ASKPASS", "SSH_ASKPASS"):  # only the terminal could answer a password prompt
        monkeypatch.delenv(helper, raising=False)
    server = ThreadingHTTPServer(("127.0.0.1", 0), GitServer)
    server.stop = threading.Event()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.stop.set()
    server.shutdown()
    server.server_close()


def test_clone_repo_times_out_and_stops_git(run_yaml, git_server, work):
    started = time.monotonic()
    result, _ = run_yaml(workflow(f"""
        - type: clone_repo
          url: {git_server}/slow/repo.git
          dest: out
          timeout: 1
    """), cwd=work)
    assert result.type == "failure"
    assert "timed out after 1 s" in result.message
    # git-remote-http is a grandchild holding the pipes: it must die too, or this would hang.
    assert time.monotonic() - started < 10


def test_clone_repo_never_asks_for_a_password(run_yaml, git_server, work):
    result, _ = run_yaml(workflow(f"""
        - type: clone_repo
          url: {git_server}/private/repo.git
          dest: out
    """), cwd=work)
    assert result.type == "failure"
    assert "could not read Username" in result.message
    assert "terminal prompts disabled" in result.message


def test_git_missing_is_reported(run_yaml, origin, work, monkeypatch, tmp_path):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    result, _ = run_yaml(workflow(f"""
        - type: clone_repo
          url: {origin}
          dest: out
    """), cwd=work)
    assert result.type == "failure"
    assert "git is not installed" in result.message


# -- get_sha ---------------------------------------------------------------------

def test_get_sha_of_head_and_of_refs(run_yaml, origin, work):
    clone(origin, work)
    result, _ = run_yaml(workflow("""
        - type: get_sha
          repo_path: clone
          store_as: computed.head
        - type: get_sha
          repo_path: clone
          ref: v1
          store_as: computed.tag
        - type: get_sha
          repo_path: clone
          ref: origin/main
          store_as: computed.remote
    """), cwd=work)
    assert result.type == "success", result.message
    computed = result.state["computed"]
    assert computed["head"] == computed["remote"] == git("rev-parse", "HEAD", cwd=origin)
    # The annotated tag answers with its commit, not with the tag object.
    assert computed["tag"] == git("rev-parse", "HEAD~1", cwd=origin)
    assert computed["tag"] != git("rev-parse", "v1", cwd=origin)


def test_get_sha_on_a_missing_folder(run_yaml, work):
    result, _ = run_yaml(workflow("""
        - type: get_sha
          repo_path: .source/never-cloned
          store_as: computed.sha
    """), cwd=work)
    assert result.type == "failure"
    assert "repository folder '.source/never-cloned' does not exist" in result.message
    assert "sha" not in result.state["computed"]


def test_get_sha_on_a_plain_folder(run_yaml, work):
    (work / "plain").mkdir()
    result, _ = run_yaml(workflow("""
        - type: get_sha
          repo_path: plain
          store_as: computed.sha
    """), cwd=work)
    assert result.type == "failure"
    assert "'plain' is not a git repository" in result.message


def test_get_sha_does_not_answer_for_the_repository_around_the_folder(run_yaml, origin):
    # A half-made clone inside a project must not report the project's own commit.
    (origin / ".source" / "broken").mkdir(parents=True)
    result, _ = run_yaml(workflow("""
        - type: get_sha
          repo_path: .source/broken
          store_as: computed.sha
    """), cwd=origin)
    assert result.type == "failure"
    assert "is not a git repository" in result.message


def test_get_sha_on_an_empty_repository(run_yaml, work):
    git("init", "-q", "empty", cwd=work)
    result, _ = run_yaml(workflow("""
        - type: get_sha
          repo_path: empty
          store_as: computed.sha
    """), cwd=work)
    assert result.type == "failure"
    assert "'HEAD' does not name a commit in 'empty'" in result.message


def test_get_sha_unknown_ref_routes_on_failure(run_yaml, origin, work):
    clone(origin, work)
    result, _ = run_yaml(workflow("""
        - type: get_sha
          repo_path: clone
          ref: no-such-branch
          store_as: computed.sha
    """), cwd=work)
    assert result.type == "failure"
    assert result.state["computed"]["last_error"] == (
        "get_sha failed: 'no-such-branch' does not name a commit in 'clone'")


# -- git_pull and git_fetch -----------------------------------------------------

def test_git_pull_fast_forwards_and_stores_the_new_sha(run_yaml, origin, work):
    local = clone(origin, work)
    new_sha = commit(origin, "third.txt", "third\n")
    result, _ = run_yaml(workflow("""
        - type: git_pull
          repo_path: clone
          store_as: computed.sha
    """), cwd=work)
    assert result.type == "success", result.message
    assert (local / "third.txt").read_text() == "third\n"
    assert result.state["computed"]["sha"] == new_sha


def test_git_pull_refuses_to_merge_diverged_history(run_yaml, origin, work):
    local = clone(origin, work)
    commit(origin, "upstream.txt", "upstream\n")
    local_sha = commit(local, "local.txt", "local\n")
    result, _ = run_yaml(workflow("""
        - type: git_pull
          repo_path: clone
    """), cwd=work)
    assert result.type == "failure"
    assert "git pull --ff-only" in result.message
    assert "fast-forward" in result.message
    assert git("rev-parse", "HEAD", cwd=local) == local_sha


def test_git_pull_without_upstream_says_so(run_yaml, origin):
    result, _ = run_yaml(workflow("""
        - type: git_pull
          repo_path: .
    """), cwd=origin)
    assert result.type == "failure"
    assert "no tracking information" in result.message.lower()


def test_git_fetch_updates_remote_branches_only(run_yaml, origin, work):
    local = clone(origin, work)
    before = git("rev-parse", "HEAD", cwd=local)
    new_sha = commit(origin, "third.txt", "third\n")
    result, _ = run_yaml(workflow("""
        - type: git_fetch
          repo_path: clone
    """), cwd=work)
    assert result.type == "success", result.message
    assert git("rev-parse", "origin/main", cwd=local) == new_sha
    assert git("rev-parse", "HEAD", cwd=local) == before
    assert not (local / "third.txt").exists()


def test_git_fetch_from_a_vanished_remote(run_yaml, origin, work):
    clone(origin, work)
    git("remote", "set-url", "origin", str(work / "gone"), cwd=work / "clone")
    result, _ = run_yaml(workflow("""
        - type: git_fetch
          repo_path: clone
    """), cwd=work)
    assert result.type == "failure"
    assert "git fetch" in result.message and "fatal:" in result.message


# -- git_ops_local ----------------------------------------------------------------

def test_git_ops_local_clone_fetch_pull_get_sha(run_yaml, origin, work):
    text = workflow(f"""
        - type: git_ops_local
          operation: clone
          args:
            url: "{origin.as_uri()}"
            dest: .source/repo
            depth: 1
          store_as: computed.cloned
        - type: git_ops_local
          operation: get-sha
          repo_path: .source/repo
          store_as: computed.head
    """)
    result, _ = run_yaml(text, cwd=work)
    assert result.type == "success", result.message
    first = git("rev-parse", "HEAD", cwd=origin)
    assert result.state["computed"]["cloned"] == result.state["computed"]["head"] == first

    new_sha = commit(origin, "third.txt", "third\n")
    result, _ = run_yaml(workflow("""
        - type: git_ops_local
          operation: fetch
          repo_path: .source/repo
          store_as: computed.upstream
        - type: git_ops_local
          operation: get-sha
          repo_path: .source/repo
          store_as: computed.before_pull
        - type: git_ops_local
          operation: pull
          repo_path: .source/repo
          store_as: computed.after_pull
    """), cwd=work)
    assert result.type == "success", result.message
    computed = result.state["computed"]
    assert computed["upstream"] == new_sha
    assert computed["before_pull"] == first
    assert computed["after_pull"] == new_sha


def test_git_ops_local_get_sha_of_args_ref(run_yaml, origin, work):
    clone(origin, work)
    result, _ = run_yaml(workflow("""
        - type: git_ops_local
          operation: get-sha
          repo_path: clone
          args: {ref: v1}
          store_as: computed.sha
    """), cwd=work)
    assert result.type == "success", result.message
    assert result.state["computed"]["sha"] == git("rev-parse", "HEAD~1", cwd=origin)


@pytest.mark.parametrize("actions, expected", [
    ("- {type: git_ops_local, operation: clone, args: {dest: out}}", "needs `args.url` and `args.dest`"),
    ("- {type: git_ops_local, operation: pull}", "git_ops_local pull needs `repo_path`"),
    ("- {type: git_ops_local, operation: fetch}", "git_ops_local fetch needs `repo_path`"),
    ("- {type: git_ops_local, operation: get-sha, repo_path: clone}", "get-sha needs `store_as`"),
])
def test_git_ops_local_missing_parameters(run_yaml, origin, work, actions, expected):
    clone(origin, work)
    result, _ = run_yaml(workflow(actions), cwd=work)
    assert result.type == "failure"
    assert expected in result.state["computed"]["last_error"]


def test_git_ops_local_fetch_store_as_needs_an_upstream(run_yaml, origin):
    result, _ = run_yaml(workflow("""
        - type: git_ops_local
          operation: fetch
          repo_path: .
          store_as: computed.upstream
    """), cwd=origin)
    assert result.type == "failure"
    assert "'@{upstream}' does not name a commit" in result.message


def test_git_types_declare_their_effects():
    registry = consequences()
    declared = {name: (set(registry.get(name).effects), registry.get(name).idempotent)
                for name in ("clone_repo", "get_sha", "git_pull", "git_fetch", "git_ops_local")}
    assert declared == {
        "clone_repo": ({"git", "network", "files"}, False),
        "get_sha": ({"git"}, True),
        "git_pull": ({"git", "network", "files"}, False),
        "git_fetch": ({"git", "network"}, True),
        "git_ops_local": ({"git", "network", "files"}, False),
    }
