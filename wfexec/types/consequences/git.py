"""Consequences that run git: clone, pull, fetch, read a commit sha (seed names and v3 `git_ops_local`).

Every call goes through the git CLI with an argument list (never a shell), with
`GIT_TERMINAL_PROMPT=0` and no terminal, so a private repository fails with a
message instead of waiting for a password, and with a timeout (param `timeout`,
default 300 s) after which git and every helper it started are killed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from wfexec.system.files import guarded_path
from wfexec.system.subprocesses import done_with, kill_group, start
from wfexec.types.registry import ActionFailed, TypeList

if TYPE_CHECKING:  # imported where git starts: a run without git never pays for it
    import subprocess

TYPES = TypeList()

DEFAULT_TIMEOUT = 300

URL = {"type": "string", "description": "what to clone: a URL (https, ssh, file://) or a local path"}
DEST = {"type": "string", "description": "the folder to clone into, relative to the working directory"}
BRANCH = {"type": "string", "description": "the branch or tag to check out (default: the remote's HEAD)"}
DEPTH = {"type": "integer", "minimum": 0, "description": "commits of history to fetch (default 1; 0 = all)"}
REPO_PATH = {"type": "string", "description": "the top folder of a git working tree, relative to the working directory"}
REF = {"type": "string", "description": "a branch, tag or commit (default HEAD)"}
STORE_AS = {"type": "string", "description": "the state path to store the commit sha at, e.g. computed.sha"}
TIMEOUT = {"type": "number", "exclusiveMinimum": 0, "description": f"seconds before git is stopped (default {DEFAULT_TIMEOUT})"}


# -- running git ------------------------------------------------------------

class GitFailed(ActionFailed):
    """git ran and exited with a non-zero status (as opposed to: missing, timed out)."""


def _git_env(ceiling: Path | None) -> dict:
    env = dict(os.environ)
    env["GIT_TERMINAL_PROMPT"] = "0"
    if ceiling is not None:
        # git must not search the folders above repo_path: a missing clone inside
        # the project would otherwise silently answer for the project's own repository.
        env["GIT_CEILING_DIRECTORIES"] = str(ceiling)
    return env


def _kill_group(proc: subprocess.Popen) -> None:
    kill_group(proc)
    proc.communicate()


def _run_git(args: list[str], *, cwd: Path, timeout: float, ceiling: Path | None = None, where: str = "") -> str:
    """Run `git args...` in `cwd` and return its stdout; raise ActionFailed on any failure."""
    import subprocess

    command = "`git " + " ".join(a for a in args if a != "--quiet") + "`" + (f" in '{where}'" if where else "")
    try:
        # A session of its own: no terminal to prompt on, and one signal stops git with
        # the helpers it starts (remote-https, index-pack), which hold the pipes open.
        proc = start(["git", *args], cwd=cwd, env=_git_env(ceiling), stdin=subprocess.DEVNULL,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
    except FileNotFoundError:
        raise ActionFailed("git is not installed (no `git` command on PATH)",
                           "install git, or check PATH for the process running wfexec") from None
    except OSError as exc:
        raise ActionFailed(f"could not start git: {exc}") from None
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise ActionFailed(f"{command} timed out after {timeout:g} s and was stopped",
                           "raise `timeout`, or check the network and the URL") from None
    except BaseException:
        _kill_group(proc)  # an interrupted run must not leave git running on its own
        raise
    finally:
        done_with(proc)
    if proc.returncode != 0:
        raise GitFailed(f"{command} failed: {_reason(err, proc.returncode)}")
    return out


def _reason(stderr: str, code: int) -> str:
    """The line of git's stderr that says what went wrong."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
    if fatal:
        return fatal[-1]
    # Without fatal/error, git's explanation comes first and suggested commands follow.
    plain = [line for line in lines if not line.startswith("hint:")]
    return plain[0] if plain else f"exit status {code}"


def _timeout(params) -> float:
    return params.get("timeout", DEFAULT_TIMEOUT)


# -- repositories -------------------------------------------------------------

def _repository(repo_path: str, ctx, timeout: float) -> Path:
    """The folder of an existing repository, or ActionFailed saying why it is not one."""
    folder = ctx.resolve_file(repo_path)
    if not folder.exists():
        raise ActionFailed(f"repository folder '{repo_path}' does not exist", "clone it first (clone_repo)")
    if not folder.is_dir():
        raise ActionFailed(f"'{repo_path}' is a file, not a repository folder")
    try:
        _run_git(["rev-parse", "--git-dir"], cwd=folder, timeout=timeout, ceiling=_ceiling(folder))
    except GitFailed:
        raise ActionFailed(f"'{repo_path}' is not a git repository (no .git in that folder)",
                           "point repo_path at the top folder of a clone") from None
    return folder


def _ceiling(folder: Path) -> Path:
    return Path(os.path.realpath(folder)).parent


def _git_in(folder: Path, args: list[str], timeout: float, where: str = "") -> str:
    return _run_git(args, cwd=folder, timeout=timeout, ceiling=_ceiling(folder), where=where)


GIT_FETCH_TIMEOUT = 60  # a precondition waits this long for the network before answering "cannot tell"


def git_output(folder: Path, args: list[str], timeout: float = DEFAULT_TIMEOUT) -> str:
    """stdout of `git args` run in the repository `folder` (never one above it); ActionFailed on any failure."""
    return _git_in(folder, args, timeout)


def _commit_sha(folder: Path, ref: str, repo_path: str, timeout: float) -> str:
    if ref.startswith("-"):
        raise ActionFailed(f"'{ref}' is not a ref (it starts with '-')")
    try:
        # ^{commit}: an annotated tag answers with the commit it names, not the tag object.
        out = _git_in(folder, ["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], timeout)
    except GitFailed:
        raise ActionFailed(f"'{ref}' does not name a commit in '{repo_path}'",
                           "an empty repository has no HEAD yet; check the branch or tag name") from None
    return out.strip()


def _store_sha(params, ctx, folder: Path, repo_path: str, ref: str = "HEAD") -> None:
    if params.get("store_as"):
        ctx.set(params["store_as"], _commit_sha(folder, ref, repo_path, _timeout(params)))


def _whole_number(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or value != int(value):
        raise ActionFailed(f"`{name}` must be a whole number of 0 or more, not {value!r}")
    return int(value)


def _require(params, name: str, operation: str) -> str:
    value = params.get(name)
    if value in (None, ""):
        raise ActionFailed(f"{operation} needs `{name}`")
    return value


# -- the operations -----------------------------------------------------------

def _clone(url: str, dest: str, branch: str | None, depth: int, params, ctx) -> None:
    target = guarded_path(ctx, {"dest": dest}, "dest", "clone into")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        if ctx.run.rerun_in_flight and _cloned_from(target, url, branch, _timeout(params)):
            # The step runs again after its process died: its first run cloned this, and nothing it did after
            # the clone was committed. The clone is the same one this call would make.
            ctx.io.trace(f"  '{dest}' is already a clone of {url}: the step's first run made it")
            _store_sha(params, ctx, target, dest)
            return
        raise ActionFailed(f"cannot clone into '{dest}': it already exists and is not an empty folder",
                           "use git_pull to update an existing clone, or delete the folder first")
    depth = _whole_number(depth, "depth")
    args = ["clone", "--quiet"]
    if depth:
        args += ["--depth", str(depth)]
    if branch:
        args += ["--branch", branch]
    # `--` so that a URL starting with '-' is never read as an option (--upload-pack=...).
    args += ["--", url, os.path.abspath(target)]
    timeout = _timeout(params)
    _run_git(args, cwd=ctx.cwd, timeout=timeout)
    _store_sha(params, ctx, target, dest)


def _cloned_from(folder: Path, url: str, branch: str | None, timeout: float) -> bool:
    """Whether `folder` is a clone of `url` (on `branch`, when one is given)."""
    try:
        origin = _run_git(["config", "--get", "remote.origin.url"], cwd=folder, timeout=timeout,
                          ceiling=_ceiling(folder)).strip()
        on = _run_git(["rev-parse", "--abbrev-ref", "HEAD"], cwd=folder, timeout=timeout,
                      ceiling=_ceiling(folder)).strip() if branch else None
    except ActionFailed:
        return False
    return origin == url and (branch is None or on == branch)


@TYPES.consequence("clone_repo", {"url": URL, "dest": DEST, "branch": BRANCH, "depth": DEPTH, "store_as": STORE_AS,
                                  "timeout": TIMEOUT},
                   ["url", "dest"], paths=("store_as",), effects=("git", "network", "files"), idempotent=False)
def clone_repo(params, ctx):
    """`git clone --depth N [--branch B] url dest` (depth default 1); dest must not be a non-empty folder.

    When the step runs again because its process died after the clone, the clone it finds there (of the same
    url and branch) is taken as this call's."""
    _clone(params["url"], params["dest"], params.get("branch"), params.get("depth", 1), params, ctx)


@TYPES.consequence("get_sha", {"repo_path": REPO_PATH, "store_as": STORE_AS, "ref": REF, "timeout": TIMEOUT},
                   ["repo_path", "store_as"], paths=("store_as",), effects=("git",))
def get_sha(params, ctx):
    """Store the full commit sha of `ref` (default HEAD) in the repository at `repo_path`."""
    repo_path = params["repo_path"]
    folder = _repository(repo_path, ctx, _timeout(params))
    ctx.set(params["store_as"], _commit_sha(folder, params.get("ref") or "HEAD", repo_path, _timeout(params)))


@TYPES.consequence("git_pull", {"repo_path": REPO_PATH, "store_as": STORE_AS, "timeout": TIMEOUT},
                   ["repo_path"], paths=("store_as",), effects=("git", "network", "files"), idempotent=False)
def git_pull(params, ctx):
    """`git pull --ff-only` in `repo_path`; `store_as` keeps the new HEAD sha."""
    repo_path = params["repo_path"]
    folder = _repository(repo_path, ctx, _timeout(params))
    _git_in(folder, ["pull", "--ff-only", "--quiet"], _timeout(params), where=repo_path)
    _store_sha(params, ctx, folder, repo_path)


@TYPES.consequence("git_fetch", {"repo_path": REPO_PATH, "timeout": TIMEOUT}, ["repo_path"],
                   effects=("git", "network"))
def git_fetch(params, ctx):
    """`git fetch` in `repo_path`: update remote-tracking branches, leave the files alone."""
    repo_path = params["repo_path"]
    folder = _repository(repo_path, ctx, _timeout(params))
    _git_in(folder, ["fetch", "--quiet"], _timeout(params), where=repo_path)


def _ops_clone(params, ctx):
    args = params.get("args") or {}
    url = args.get("url")
    dest = args.get("dest") or params.get("repo_path")
    if not url or not dest:
        raise ActionFailed("git_ops_local clone needs `args.url` and `args.dest` (or `repo_path`)")
    _clone(url, dest, args.get("branch"), args.get("depth", 1), params, ctx)


def _ops_pull(params, ctx):
    git_pull({**params, "repo_path": _require(params, "repo_path", "git_ops_local pull")}, ctx)


def _ops_fetch(params, ctx):
    repo_path = _require(params, "repo_path", "git_ops_local fetch")
    git_fetch(params, ctx)
    if params.get("store_as"):
        # After a fetch the sha worth keeping is the one a pull would bring in.
        folder = ctx.resolve_file(repo_path)
        ctx.set(params["store_as"], _commit_sha(folder, "@{upstream}", repo_path, _timeout(params)))


def _ops_get_sha(params, ctx):
    repo_path = _require(params, "repo_path", "git_ops_local get-sha")
    store_as = _require(params, "store_as", "git_ops_local get-sha")
    ref = (params.get("args") or {}).get("ref") or "HEAD"
    get_sha({**params, "repo_path": repo_path, "store_as": store_as, "ref": ref}, ctx)


_OPERATIONS = {"clone": _ops_clone, "pull": _ops_pull, "fetch": _ops_fetch, "get-sha": _ops_get_sha}


@TYPES.consequence("git_ops_local", {
    "operation": {"enum": list(_OPERATIONS)},
    "repo_path": REPO_PATH,
    "args": {"type": "object", "properties": {"url": URL, "dest": DEST, "branch": BRANCH, "depth": DEPTH,
                                              "ref": REF}, "additionalProperties": False},
    "store_as": STORE_AS,
    "timeout": TIMEOUT,
}, ["operation"], paths=("store_as",), effects=("git", "network", "files"), idempotent=False)
def git_ops_local(params, ctx):
    """v3: clone (args.url, args.dest), pull, fetch or get-sha; `store_as` keeps the resulting commit sha."""
    _OPERATIONS[params["operation"]](params, ctx)
