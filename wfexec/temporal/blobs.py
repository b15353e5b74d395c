"""State too large for Temporal's payloads, passed by reference (the claim-check pattern).

A run's state travels in Temporal's history: with every effect step's arguments and result, in queries and in
the run's result. Temporal refuses a payload over 2 MB. The SDK's external storage (`ExternalStorage`) replaces
any payload over a threshold (256 KiB) by a claim, and gives the bytes to a storage driver; this is wfexec's
driver: a folder that every client and worker can read and write, the bytes named by their SHA-256 (so a
payload sent twice is stored once). For a cluster spread over machines the folder is shared storage (NFS, a
mounted bucket); the SDK also has S3 and GCS drivers (`temporalio.contrib`).

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

from temporalio.api.common.v1 import Payload
from temporalio.converter import (DataConverter, ExternalStorage, StorageDriver, StorageDriverClaim,
                                  StorageDriverRetrieveContext, StorageDriverStoreContext)

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


class FolderStorageDriver(StorageDriver):
    """Payloads as files `<folder>/sha256/<first two hex digits>/<digest>`, written whole or not at all."""

    def __init__(self, folder: Path):
        self.folder = folder

    def name(self) -> str:
        return DRIVER_NAME

    def _path(self, digest: str) -> Path:
        return self.folder / "sha256" / digest[:2] / digest

    async def store(self, context: StorageDriverStoreContext, payloads: Sequence[Payload]) -> list[StorageDriverClaim]:
        claims = []
        for payload in payloads:
            data = payload.SerializeToString()
            digest = sha256(data).hexdigest()
            path = self._path(digest)
            if not path.exists():
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
            claims.append(StorageDriverClaim(claim_data={"sha256": digest, "bytes": str(len(data))}))
        return claims

    async def retrieve(self, context: StorageDriverRetrieveContext,
                       claims: Sequence[StorageDriverClaim]) -> list[Payload]:
        payloads = []
        for claim in claims:
            digest = claim.claim_data["sha256"]
            path = self._path(digest)
            try:
                data = path.read_bytes()
            except OSError:
                raise MissingBlob(f"a run's state is stored by reference as {digest[:12]}…, which is not in "
                                  f"{self.folder}", f"give every client and worker the same {FOLDER_VARIABLE} "
                                                    "(a folder they all reach)") from None
            if sha256(data).hexdigest() != digest:
                raise MissingBlob(f"the stored state {path} does not match its name: the file was changed",
                                  "restore it, or start the run again")
            payloads.append(Payload.FromString(data))
        return payloads


def data_converter() -> DataConverter:
    """The default converter, with payloads over 256 KiB stored in the blob folder."""
    storage = ExternalStorage(drivers=[FolderStorageDriver(blob_folder())])
    return dataclasses.replace(DataConverter.default, external_storage=storage)
