"""Where large run state is stored by reference: a folder (the default) or an S3-compatible bucket, chosen by
`WFEXEC_TEMPORAL_BLOBS` (a folder, or `s3://BUCKET`).

Each store gives the SDK its storage driver, and lists and removes the blobs of one run, for their lifecycle
(`wfexec.temporal.blob_lifecycle`). Blobs are kept by run in both: a run's blobs go when it does, with no count
of who else refers to them.

The S3 store is the SDK's own driver (`temporalio.contrib.aws.s3driver`, keys
`v0/ns/<namespace>/wt/<workflow type>/wi/<run id>/ri/<Temporal run id>/d/sha256/<digest>`), over boto3, which
takes its endpoint, region and credentials from the usual AWS settings (`AWS_ENDPOINT_URL` for a store that is not
Amazon's, `AWS_ACCESS_KEY_ID`, `~/.aws/config`, …). The bucket must exist.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from temporalio.contrib.aws.s3driver import S3StorageDriver, S3StorageDriverClient
from temporalio.converter import StorageDriver

from wfexec.temporal import TemporalUnavailable
from wfexec.temporal.blobs import (FOLDER_VARIABLE, RUNS, UNATTRIBUTED, FolderStorageDriver, blob_folder,
                                   run_folder_name, run_id_of)

S3_SCHEME = "s3://"
S3_INSTALL_HINT = "pip install 'wfexec[temporal-s3]'"


@dataclass
class StoredRun:
    """The blobs of one run (run_id None: blobs of no run the store can name)."""

    run_id: str | None
    bytes: int
    blobs: int
    newest: float  # when the newest of them was written or last reused, in seconds since the epoch


class BlobStore(ABC):
    @abstractmethod
    def driver(self) -> StorageDriver: ...

    @abstractmethod
    def where(self) -> str:
        """The store, as a person would name it in a message."""

    @abstractmethod
    async def stored_runs(self) -> list[StoredRun]:
        """Every run with blobs here, and (as run_id None) the blobs of no run, if any."""

    @abstractmethod
    async def remove(self, run_id: str | None) -> None:
        """Remove a run's blobs (None: the blobs of no run)."""


class FolderStore(BlobStore):
    def __init__(self, folder: Path):
        self.folder = folder

    def driver(self) -> StorageDriver:
        return FolderStorageDriver(self.folder)

    def where(self) -> str:
        return str(self.folder)

    async def stored_runs(self) -> list[StoredRun]:
        return await asyncio.to_thread(self._stored_runs)

    def _stored_runs(self) -> list[StoredRun]:
        found = []
        runs = self.folder / RUNS
        for entry in sorted(runs.iterdir()) if runs.is_dir() else ():
            if not entry.name.startswith(".") and entry.is_dir():
                found.append(_summed(run_id_of(entry.name), entry))
        unattributed = self.folder / UNATTRIBUTED
        if unattributed.is_dir():
            found.append(_summed(None, unattributed))
        return found

    async def remove(self, run_id: str | None) -> None:
        await asyncio.to_thread(self._remove, run_id)

    def _remove(self, run_id: str | None) -> None:
        path = self.folder / UNATTRIBUTED if run_id is None else self.folder / RUNS / run_folder_name(run_id)
        # Renamed first: a listing never shows a half-removed run, and two sweeping workers never both remove it.
        doomed = path.with_name(f".removing-{uuid.uuid4().hex}")
        try:
            path.rename(doomed)
        except FileNotFoundError:
            return  # another worker's sweep removed it first
        shutil.rmtree(doomed, ignore_errors=True)


def _summed(run_id: str | None, folder: Path) -> StoredRun:
    size = count = 0
    newest = 0.0
    for path in folder.rglob("*"):
        if path.name.startswith("."):
            continue  # a blob being written
        try:
            stat = path.stat()
        except FileNotFoundError:
            continue
        if path.is_file():
            size, count, newest = size + stat.st_size, count + 1, max(newest, stat.st_mtime)
    if count == 0:  # an empty folder: its own time says when it was made (a run starting)
        newest = folder.stat().st_mtime
    return StoredRun(run_id, size, count, newest)


class S3Store(BlobStore):
    """A bucket of an S3-compatible store, through the SDK's S3 driver."""

    def __init__(self, bucket: str):
        self.bucket = bucket
        self._s3: Any = None

    def _client(self) -> Any:
        if self._s3 is None:
            try:
                import boto3
            except ImportError:
                raise TemporalUnavailable(f"{FOLDER_VARIABLE}={S3_SCHEME}{self.bucket} needs boto3, which is not "
                                          "installed", f"install it with: {S3_INSTALL_HINT}") from None
            self._s3 = boto3.client("s3")
        return self._s3

    def driver(self) -> StorageDriver:
        return S3StorageDriver(client=Boto3Objects(self._client()), bucket=self.bucket)

    def where(self) -> str:
        return f"{S3_SCHEME}{self.bucket}"

    async def stored_runs(self) -> list[StoredRun]:
        return await asyncio.to_thread(self._said, self._stored_runs)

    def _said(self, call, *args):
        """A call to the store, whose failure (unreachable, refused, no such bucket) is one line, exit 5."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return call(*args)
        except (BotoCoreError, ClientError) as exc:
            raise TemporalUnavailable(f"the S3 store {self.where()} failed: {exc}",
                                      "check the bucket, AWS_ENDPOINT_URL and the credentials") from None

    def _objects(self):
        for page in self._client().get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix="v0/"):
            yield from page.get("Contents") or ()

    def _stored_runs(self) -> list[StoredRun]:
        runs: dict[str | None, StoredRun] = {}
        for item in self._objects():
            run_id = _s3_run_id(item["Key"])
            stored = runs.setdefault(run_id, StoredRun(run_id, 0, 0, 0.0))
            stored.bytes += int(item["Size"])
            stored.blobs += 1
            stored.newest = max(stored.newest, item["LastModified"].timestamp())
        return list(runs.values())

    async def remove(self, run_id: str | None) -> None:
        await asyncio.to_thread(self._said, self._remove, run_id)

    def _remove(self, run_id: str | None) -> None:
        keys = [item["Key"] for item in self._objects() if _s3_run_id(item["Key"]) == run_id]
        for start in range(0, len(keys), 1000):  # S3's limit per request
            self._client().delete_objects(Bucket=self.bucket, Delete={
                "Objects": [{"Key": key} for key in keys[start:start + 1000]], "Quiet": True})


def _s3_run_id(key: str) -> str | None:
    """The run (workflow id) in a key of the SDK's S3 driver, or None for a key it wrote for no workflow."""
    parts = key.split("/")
    if "wi" in parts:
        index = parts.index("wi") + 1
        if index < len(parts) and parts[index] != "null":
            return unquote(parts[index])
    return None


class Boto3Objects(S3StorageDriverClient):
    """The SDK S3 driver's client interface (`S3StorageDriverClient`) over boto3, whose calls block: run in
    threads. (The SDK's own adapter needs aioboto3 and its type stubs at run time.)"""

    def __init__(self, s3: Any):
        self.s3 = s3

    async def put_object(self, *, bucket: str, key: str, data: bytes) -> None:
        await asyncio.to_thread(self.s3.put_object, Bucket=bucket, Key=key, Body=data)

    async def object_exists(self, *, bucket: str, key: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            await asyncio.to_thread(self.s3.head_object, Bucket=bucket, Key=key)
            return True
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise

    async def get_object(self, *, bucket: str, key: str) -> bytes:
        def read() -> bytes:
            return self.s3.get_object(Bucket=bucket, Key=key)["Body"].read()

        return await asyncio.to_thread(read)

    def describe(self) -> dict[str, str]:
        return {"endpoint": str(self.s3.meta.endpoint_url)}


def configured_store() -> BlobStore:
    """The store `WFEXEC_TEMPORAL_BLOBS` names: `s3://BUCKET`, else a folder (blobs.blob_folder)."""
    named = os.environ.get(FOLDER_VARIABLE) or ""
    if named.startswith(S3_SCHEME):
        bucket = named[len(S3_SCHEME):].strip("/")
        if not bucket or "/" in bucket:
            raise TemporalUnavailable(f"{FOLDER_VARIABLE}={named} does not name a bucket",
                                      f"write it as {S3_SCHEME}BUCKET (the SDK's S3 driver keeps its own keys)")
        return S3Store(bucket)
    return FolderStore(blob_folder())
