"""Preconditions over a hiivmind corpus: its config, its index, its sources and their clones.

The config is found as the consequences find it (wfexec.types.consequences.corpus):
`path` if given, else data/config.yaml, else config.yaml. Every "cannot tell"
(no config, no clone, no network) is false; only a config that is not valid
YAML stops the run, as a corrupt corpus is not a "no".
"""

from __future__ import annotations

from pathlib import Path

from wfexec.types.consequences.corpus import (PLACEHOLDER_MARK, SOURCE_ID, corpus_config_path, corpus_data_dir,
                                              find_source, load_config_document)
from wfexec.types.consequences.git import GIT_FETCH_TIMEOUT, git_output
from wfexec.types.registry import ActionFailed, TypeList

TYPES = TypeList()

CONFIG_PATH = {"type": "string", "description": "the corpus config file (default: data/config.yaml, else config.yaml)"}
SOURCE = {"type": "string", "description": "a source id from the config's sources (letters, digits, - and _)"}
FILES = ("files",)
ASPECTS = ("exists", "cloned", "has_updates")


@TYPES.precondition("config_exists", {"path": CONFIG_PATH}, effects=FILES)
def config_exists(params, ctx):
    """True when the corpus config exists: data/config.yaml, else config.yaml (not parsed)."""
    return corpus_config_path(ctx, params.get("path")) is not None


def _index(params, ctx) -> Path:
    return corpus_data_dir(ctx, params.get("path")) / "index.md"


@TYPES.precondition("index_exists", {"path": CONFIG_PATH}, effects=FILES)
def index_exists(params, ctx):
    """True when the corpus index exists: index.md beside the config (data/index.md, else index.md)."""
    return _index(params, ctx).is_file()


@TYPES.precondition("index_is_placeholder", {"path": CONFIG_PATH}, effects=FILES)
def index_is_placeholder(params, ctx):
    """True when the corpus index is still init's placeholder (contains "Run hiivmind-corpus-build"); false when missing."""
    index = _index(params, ctx)
    return index.is_file() and PLACEHOLDER_MARK in index.read_text(encoding="utf-8", errors="replace")


def _source_exists(source_id: str, explicit: str | None, ctx) -> bool:
    if not isinstance(source_id, str) or not SOURCE_ID.match(source_id) or corpus_config_path(ctx, explicit) is None:
        return False
    _, document, _ = load_config_document(ctx, explicit)
    sources = document.get("sources")
    return isinstance(sources, list) and find_source(sources, source_id) is not None


def _clone(source_id: str, ctx) -> Path | None:
    if not isinstance(source_id, str) or not SOURCE_ID.match(source_id):  # null (a v8 missing value): no source
        return None
    folder = ctx.resolve_file(".source") / source_id
    return folder if folder.is_dir() else None


def _has_updates(source_id: str, ctx) -> bool:
    folder = _clone(source_id, ctx)
    if folder is None:
        ctx.trace(f"  no clone of '{source_id}' at .source/{source_id}")
        return False
    try:
        git_output(folder, ["fetch", "--quiet"], GIT_FETCH_TIMEOUT)
        head = git_output(folder, ["rev-parse", "HEAD"], GIT_FETCH_TIMEOUT).strip()
        upstream = git_output(folder, ["rev-parse", "@{u}"], GIT_FETCH_TIMEOUT).strip()
    except ActionFailed as exc:
        ctx.trace(f"  cannot tell whether '{source_id}' has updates: {exc.message}")
        return False
    return head != upstream


@TYPES.precondition("source_exists", {"id": SOURCE, "path": CONFIG_PATH}, ["id"], effects=FILES)
def source_exists(params, ctx):
    """True when the corpus config lists a source with this `id`."""
    return _source_exists(params["id"], params.get("path"), ctx)


@TYPES.precondition("source_cloned", {"id": SOURCE}, ["id"], effects=FILES)
def source_cloned(params, ctx):
    """True when the source's clone folder .source/<id> exists."""
    return _clone(params["id"], ctx) is not None


@TYPES.precondition("source_has_updates", {"id": SOURCE}, ["id"], effects=("git", "network"))
def source_has_updates(params, ctx):
    """True when, after a fetch, .source/<id>'s HEAD differs from its upstream (behind or ahead); false when unknown."""
    return _has_updates(params["id"], ctx)


@TYPES.precondition("source_check", {"source_id": SOURCE, "aspect": {"enum": list(ASPECTS)}},
                    ["source_id", "aspect"], effects=("files", "git", "network"))
def source_check(params, ctx):
    """v3: the source `exists` in the config, is `cloned` to .source/<id>, or `has_updates` upstream."""
    source_id, aspect = params["source_id"], params["aspect"]
    if aspect == "exists":
        return _source_exists(source_id, None, ctx)
    if aspect == "cloned":
        return _clone(source_id, ctx) is not None
    if aspect == "has_updates":
        return _has_updates(source_id, ctx)
    raise ActionFailed(f"source_check has no aspect '{aspect}'", f"use one of: {', '.join(ASPECTS)}")
