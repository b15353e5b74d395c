"""State too large for Temporal's payloads, passed by reference (the claim-check pattern).

A run's state travels in Temporal's history: with every effect step's arguments and result, in queries and in
the run's result. Temporal refuses a payload over 2 MB. The SDK's external storage (`ExternalStorage`) replaces
any payload over a threshold (256 KiB) by a claim, and gives the bytes to a storage driver; this is wfexec's
driver: a folder that every client and worker can read and write, the bytes named by their SHA-256 and kept
in a folder of the run they belong to (`runs/<run id>/<digest>`: a payload a run sends twice is stored once, and a
run's blobs are removed with it, `wfexec.temporal.blob_lifecycle`). For a cluster spread over machines the folder
is shared storage (NFS), or the store is an S3 bucket (`wfexec.temporal.blob_stores`).

Where: `$WFEXEC_TEMPORAL_BLOBS`, else `$XDG_DATA_HOME/wfexec/temporal-blobs`, else
`~/.local/share/wfexec/temporal-blobs`. Files and folders get the modes the umask gives any other: workers
running as different users share the folder through a common group (umask 002, a setgid folder).
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from pathlib import Path
from typing import Sequence
from urllib.parse import quote, unquote

from temporalio.api.common.v1 import Payload
from temporalio.converter import (DataConverter, ExternalStorage, StorageDriver, StorageDriverClaim,
                                  StorageDriverRetrieveContext, StorageDriverStoreContext, StorageDriverWorkflowInfo)

from wfexec.system.digest import sha256
from wfexec.system.files import new_file_mode
from wfexec.temporal import TemporalUnavailable

FOLDER_VARIABLE = "WFEXEC_TEMPORAL_BLOBS"
DRIVER_NAME = "wfexec.folder"


def blob_folder() -> Path:
    named = os.environ.get(FOLDER_VARIABLE)
    if named:
        return Path(named).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "wfexec" / "temporal-blobs"


class MissingBlob(TemporalUnavailable):
    """A claim whose bytes are not in the folder (another folder, or removed): one line, exit 5."""


RUNS = "runs"  # <folder>/runs/<run id, quoted>/<digest>: the blobs of one run
UNATTRIBUTED = "sha256"  # <folder>/sha256/<2 hex digits>/<digest>: blobs of no known run (and of wfexec before)


def run_folder_name(run_id: str) -> str:
    """A run id as one safe file name."""
    name = quote(run_id, safe="")
    return "%2E" + name[1:] if name.startswith(".") else name  # never hidden, never `..`


def run_id_of(folder_name: str) -> str:
    return unquote(folder_name)


def run_of(context: StorageDriverStoreContext) -> str | None:
    """The run (workflow id) a payload is stored for: the SDK names it for the client starting a run, the workflow
    code and its activities alike."""
    target = context.target
    return target.id if isinstance(target, StorageDriverWorkflowInfo) and target.id else None


class FolderStorageDriver(StorageDriver):
    """Payloads as files `<folder>/runs/<run id>/<digest>`, written whole or not at all."""

    def __init__(self, folder: Path):
        self.folder = folder

    def name(self) -> str:
        return DRIVER_NAME

    def _path(self, digest: str, run_id: str | None) -> Path:
        if run_id is None:
            return self.folder / UNATTRIBUTED / digest[:2] / digest
        return self.folder / RUNS / run_folder_name(run_id) / digest

    async def store(self, context: StorageDriverStoreContext, payloads: Sequence[Payload]) -> list[StorageDriverClaim]:
        claims = []
        run_id = run_of(context)
        for payload in payloads:
            data = payload.SerializeToString()
            digest = sha256(data).hexdigest()
            path = self._path(digest, run_id)
            try:
                # in use again: `wfexec gc` tells a run just starting by its blobs' age (blob_lifecycle)
                os.utime(path)
            except FileNotFoundError:
                path.parent.mkdir(parents=True, exist_ok=True)
                # Another worker may write the same digest at the same time: both write whole files, one wins.
                handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{digest[:8]}-")
                try:
                    with os.fdopen(handle, "wb") as out:
                        out.write(data)
                    # as any file would be: workers under other users of a shared group read it (umask 002)
                    os.chmod(temporary, new_file_mode())
                    os.replace(temporary, path)
                except BaseException:
                    Path(temporary).unlink(missing_ok=True)
                    raise
            except PermissionError:
                pass  # another user's file, in a folder shared read-only with us: used as it is
            claim = {"sha256": digest, "bytes": str(len(data))}
            if run_id is not None:
                claim["run"] = run_id
            claims.append(StorageDriverClaim(claim_data=claim))
        return claims

    async def retrieve(self, context: StorageDriverRetrieveContext,
                       claims: Sequence[StorageDriverClaim]) -> list[Payload]:
        payloads = []
        for claim in claims:
            digest = claim.claim_data["sha256"]
            path = self._path(digest, claim.claim_data.get("run"))
            try:
                data = path.read_bytes()
            except OSError:
                raise MissingBlob(f"a run's state is stored by reference as {digest[:12]}…, which is not in "
                                  f"{self.folder}", f"give every client and worker the same {FOLDER_VARIABLE} "
                                                    "(a folder they all reach); a run that ended longer ago than "
                                                    "the workers' --blob-retention has had its blobs removed") \
                    from None
            if sha256(data).hexdigest() != digest:
                raise MissingBlob(f"the stored state {path} does not match its name: the file was changed",
                                  "restore it, or start the run again")
            payloads.append(Payload.FromString(data))
        return payloads


def data_converter() -> DataConverter:
    """The default converter, with payloads over 256 KiB stored in the configured blob store (a folder, or an S3
    bucket: `wfexec.temporal.blob_stores.configured_store`)."""
    from wfexec.temporal.blob_stores import configured_store

    storage = ExternalStorage(drivers=[configured_store().driver()])
    return dataclasses.replace(DataConverter.default, external_storage=storage)
