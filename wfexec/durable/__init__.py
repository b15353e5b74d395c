"""Durable runs: the SQLite store and the journal that makes a run resumable."""
