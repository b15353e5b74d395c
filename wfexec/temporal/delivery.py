"""How a run's bundle (`wfexec.temporal.bundle`) reaches the workers: in the run's own history, never through a
shared disk.

The archive is cut into parts of PART_CHARS base64 characters. The first rides in the run's request (the
workflow's input); the client sends any others as `bundle_part` signals right after the start. Each part is a
payload of its own, under the 256 KiB past which wfexec's converter would store a payload by reference in a folder
every worker must reach (`wfexec.temporal.blobs`), and far under Temporal's 2 MB per payload; the whole archive is
capped (`bundle.MAX_BUNDLE_BYTES`) because the run's history, 50 MB at most, holds it.

The workflow code reads the parts from its input and signals. An activity on a worker that has not unpacked the
bundle yet reads them from the run's history through the server (`fetch_history_events`), once per worker and
bundle. A run resumed later, on new workers, reads exactly what it started with: the parts are its history's.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from temporalio import workflow

from wfexec.records import replace
from wfexec.running.engine import RunError
from wfexec.temporal.bundle import Bundle, BundleError, refuse_without_plugins, unpacked
from wfexec.temporal.messages import ClusterRequest

PART_CHARS = 128 * 1024
PART_SIGNAL = "bundle_part"


@dataclass
class WorkerPlace:
    """This worker process: where its runs' relative paths resolve and bundles are unpacked (`--workdir`, None:
    the folder each run was started from, bundles under the worker's own folder), its client, its own queue."""

    workdir: Path | None = None
    bundles_under: Path = field(default_factory=Path.cwd)
    client: Any = None
    queue: str = ""
    name: str = ""


here = WorkerPlace()


def parts_of(bundle: Bundle) -> list[str]:
    text = base64.b64encode(bundle.data).decode("ascii")
    return [text[i:i + PART_CHARS] for i in range(0, len(text), PART_CHARS)] or [""]


def with_bundle(request: ClusterRequest, bundle: Bundle, parts: list[str]) -> ClusterRequest:
    """The request with its bundle: named, and its first part (`ClusterRequest.for_steps` leaves it out)."""
    return replace(request, bundle={**bundle.reference(), "parts": len(parts), "first": parts[0]})


async def send_rest(handle, parts: list[str]) -> None:
    for index, part in enumerate(parts[1:], start=1):
        await handle.signal(PART_SIGNAL, args=[index, part])


def _archive(parts: list[str]) -> bytes:
    return base64.b64decode("".join(parts))


def _local(reference: dict, data: bytes | None) -> Path | None:
    """The bundle's workflow file on this worker, after checking its plugins (None: not unpacked, no data)."""
    refuse_without_plugins(reference.get("plugins") or {}, here.name or "(this worker)")
    return unpacked(here.workdir or here.bundles_under, reference, data)


def localized_paths(request: ClusterRequest, path: Path) -> ClusterRequest:
    """The request with this worker's copy of the workflow, and its work folder for relative paths (the folder
    the run was started from kept as `started_in`, see `rebased`)."""
    if here.workdir is None:
        return replace(request, path=str(path))
    return replace(request, path=str(path), cwd=str(here.workdir), started_in=request.cwd)


def rebased(path: str, request: ClusterRequest) -> str:
    """A path the workflow code made from the run's folder (a `states` node's working folder), on this worker:
    under its --workdir instead."""
    started_in = request.started_in
    if started_in is None:
        return path
    try:
        return str(Path(request.cwd) / Path(path).relative_to(started_in))
    except ValueError:  # an absolute folder the node names: the same on every machine
        return path


async def localized(request: ClusterRequest, run_id: str) -> ClusterRequest:
    """For an activity: the request as this worker runs it, the bundle fetched from the run's history if this
    worker has not unpacked it yet. Raises BundleError (plugins missing, a damaged bundle)."""
    reference = request.bundle
    if reference is None:  # a run started before bundles: the files are where the client saw them
        return request
    path = _local(reference, None)
    if path is None:
        path = _local(reference, _archive(await fetch_parts(here.client, run_id, reference["parts"])))
    assert path is not None
    return localized_paths(request, path)


async def fetch_parts(client, run_id: str, count: int) -> list[str]:
    """The bundle's parts as the run's history holds them: the first in its input, the others in its signals."""
    parts: dict[int, str] = {}
    async for event in client.get_workflow_handle(run_id).fetch_history_events():
        if event.HasField("workflow_execution_started_event_attributes"):
            (request,) = await client.data_converter.decode(
                event.workflow_execution_started_event_attributes.input.payloads, [dict])
            parts[0] = request["bundle"]["first"]
        elif event.HasField("workflow_execution_signaled_event_attributes"):
            signaled = event.workflow_execution_signaled_event_attributes
            if signaled.signal_name == PART_SIGNAL:
                index, text = await client.data_converter.decode(signaled.input.payloads, [int, str])
                parts[index] = text
        if len(parts) == count:
            break
    if len(parts) != count:
        raise BundleError(f"run {run_id}'s history holds {len(parts)} of the {count} parts of its workflow bundle",
                          "the client was cut off while sending it: start the run again")
    return [parts[index] for index in range(count)]


class BundleParts:
    """What the workflow code adds to receive its bundle: the parts after the first, as signals."""

    @workflow.signal(name=PART_SIGNAL)
    def bundle_part(self, index: int, text: str) -> None:
        self.__dict__.setdefault("_bundle_parts", {})[index] = text

    async def bundled_path(self, request: ClusterRequest) -> str:
        """The workflow file to compile on this worker: the bundle's, unpacked (once) from the parts the run's
        history holds; a run started before bundles names the client's file."""
        reference = request.bundle
        if reference is None:
            return request.path
        received: dict[int, str] = self.__dict__.setdefault("_bundle_parts", {})
        # Waited for whether or not this worker has the bundle already, and with no timer: a replay must take
        # the same steps as the first run (a run whose client was cut off mid-bundle waits until cancelled).
        await workflow.wait_condition(lambda: len(received) >= reference["parts"] - 1)
        try:
            path = _local(reference, None) or _local(reference, _archive(
                [reference["first"]] + [received[i] for i in range(1, reference["parts"])]))
        except BundleError as exc:
            raise RunError(exc.message, exc.hint) from None
        assert path is not None
        return str(path)

