"""Where the pages and the API read runs from: `StoreView` over the SQLite store (`store_view`, its streams through
one `Feed`), or `cluster_view.ClusterView` over a Temporal cluster (`wfexec serve --temporal`). Both give runs in
the shape the store's records have (`store_view.summary`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wfexec.serve import store_view
from wfexec.serve.events import all_events, run_events
from wfexec.serve.feed import Feed


class StoreView:
    """What the pages and the API read, over the SQLite store at `path` (`ClusterView` is the same over a
    Temporal cluster)."""

    backend = "sqlite"

    def __init__(self, path: Path):
        self.path = path
        self.feed = Feed(path)

    def described(self) -> str:
        return f"run store {self.path}"

    @property
    def where_runs(self) -> list[str]:
        """The options that name these runs' store on a command line."""
        return ["--store", str(self.path)]

    def with_inputs(self, record: dict[str, Any]) -> dict[str, Any]:
        return record  # the store's records hold their inputs

    def inbox(self) -> dict[str, Any]:
        return store_view.inbox(self.path)

    def runs_page(self, **filters) -> dict[str, Any]:
        return store_view.runs_page(self.path, **filters)

    def one_run(self, run_id: str) -> dict[str, Any]:
        return store_view.one_run(self.path, run_id)

    def journal(self, run_id: str, since: int = 0) -> list[dict]:
        return store_view.journal(self.path, run_id, since)

    def journal_tail(self, run_id: str, count: int) -> list[dict]:
        return store_view.journal_tail(self.path, run_id, count)

    def state(self, run_id: str) -> dict[str, Any]:
        return store_view.state(self.path, run_id)

    def graph(self, run_id: str) -> dict[str, Any]:
        return store_view.graph(self.path, run_id)

    def agents(self, run_id: str) -> list[dict[str, Any]]:
        return store_view.agents(self.path, run_id)

    def output(self, run_id: str, start: int) -> dict[str, Any]:
        return store_view.output(self.path, run_id, start)

    def run_events(self, run_id: str, since: int):
        return run_events(self.feed, run_id, since)

    def all_events(self, since: float | None):
        return all_events(self.feed, since)

    def close(self) -> None:
        self.feed.close()
