"""The workflow travels with the run: a content-addressed bundle of what a run reads as its definition.

When a run starts on the cluster, the client packs the workflow file and every file and folder its compile found
(imports, sub-workflows, documents, states folders, scripts, the plugin manifest): the places the compiler records
while it resolves them (`wfexec.language.compiler.recording_lookups`, the record the compiled-workflow cache keeps),
so a path that validates is a path that is packed. The bundle is named by the SHA-256 of its manifest, which lists
each file's own SHA-256: the same files give the same name on every machine, and a worker that has unpacked a
bundle once reuses it for every run of it.

A worker unpacks a bundle under its work folder (`<workdir>/.wfexec/bundles/<digest>/`), the files at the same
places relative to one another as on the client, so documents resolve there as they did there. It refuses a
bundle whose plugins it lacks, naming them. Nothing here talks to Temporal: `wfexec.temporal.delivery` carries the
bytes in the run's own history.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from wfexec.errors import WfexecError
from wfexec.language.model import Workflow
from wfexec.system.digest import sha256

BUNDLES = Path(".wfexec") / "bundles"
MANIFEST = ".wfexec-bundle.json"  # in the archive and in the unpacked folder, whose files sit beside it
# Never part of a definition: version control, caches, wfexec's own run data.
SKIPPED = frozenset({".git", "__pycache__", ".wfexec", ".raymond", ".pytest_cache", "node_modules"})
# A bundle rides in the run's history, which Temporal refuses past 50 MB (and warns about past 10 MB).
MAX_BUNDLE_BYTES = 8 * 1024 * 1024
_ZIP_TIME = (2000, 1, 1, 0, 0, 0)  # every member gets this time: the archive's bytes depend on the files only


class BundleError(WfexecError):
    """A bundle that cannot be made (too large) or used (plugins missing, damaged)."""

    outcome = "invalid"


@dataclass(frozen=True)
class Bundle:
    digest: str            # SHA-256 of the manifest (which holds each file's SHA-256)
    workflow: str          # the workflow file's path inside the bundle
    plugins: dict          # distribution → version, of the plugins the workflow's types come from
    data: bytes            # the zip archive: the manifest and the files
    files: int

    def reference(self) -> dict:
        """What a run's request says of its bundle (the bytes travel beside it)."""
        return {"digest": self.digest, "workflow": self.workflow, "plugins": self.plugins, "bytes": len(self.data)}


def places_read(path: Path) -> list[Path]:
    """Every place the compile of the workflow at `path` looked for a file, found or not (the compiler's own
    record, so nothing here resolves a path a second way): as the compiled-workflow cache kept it, else from a
    compile made for it."""
    from wfexec.language.compiler import check_document, recording_lookups
    from wfexec.language.loader import load_file
    from wfexec.language.workflow_cache import places_looked

    kept = places_looked(path)
    if kept is not None:
        return kept
    with recording_lookups() as looked:
        check_document(load_file(path))
    return looked


def _absolute(path: Path) -> Path:
    return Path(os.path.normpath(os.path.abspath(path)))


def _files_under(folder: Path) -> list[Path]:
    found = []
    for parent, folders, names in os.walk(folder):
        folders[:] = sorted(name for name in folders if name not in SKIPPED)
        found += [Path(parent) / name for name in sorted(names)]
    return found


def definition_files(workflow: Workflow) -> list[Path]:
    """The workflow file and every file its compile found (a folder's files, for a folder), absolute."""
    files = {_absolute(workflow.path)}
    for place in places_read(workflow.path):
        place = _absolute(place)
        if place.is_file():
            files.add(place)
        elif place.is_dir():
            files.update(_absolute(file) for file in _files_under(place) if file.is_file())
    return sorted(files)


def make_bundle(workflow: Workflow) -> Bundle:
    files = definition_files(workflow)
    root = Path(os.path.commonpath([str(file.parent) for file in files]))
    contents = {file.relative_to(root).as_posix(): file.read_bytes() for file in files}
    manifest: dict = {"workflow": _absolute(workflow.path).relative_to(root).as_posix(),
                "files": {name: sha256(data).hexdigest() for name, data in sorted(contents.items())},
                "plugins": plugins_used(workflow)}
    manifest_bytes = json.dumps(manifest, sort_keys=True, indent=1).encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(zipfile.ZipInfo(MANIFEST, _ZIP_TIME), manifest_bytes)
        for name, data in sorted(contents.items()):
            member = zipfile.ZipInfo("files/" + name, _ZIP_TIME)
            member.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(member, data)
    data = buffer.getvalue()
    if len(data) > MAX_BUNDLE_BYTES:
        biggest = sorted(contents, key=lambda name: -len(contents[name]))[:3]
        raise BundleError(f"the files this run reads as its definition come to {len(data) // 1024} KiB packed, over "
                          f"the {MAX_BUNDLE_BYTES // (1024 * 1024)} MiB a run can carry (largest: "
                          f"{', '.join(biggest)})",
                          "move large data out of the workflow's folders (a run reads data from its worker's "
                          "--workdir), or run without --temporal")
    return Bundle(sha256(manifest_bytes).hexdigest(), manifest["workflow"], manifest["plugins"], data, len(contents))


def plugins_used(workflow: Workflow) -> dict:
    """distribution → version of every plugin whose node types, preconditions or consequences the workflow (and
    its sub-workflows) calls; wfexec's own types are not plugins."""
    from importlib.metadata import PackageNotFoundError, version

    from wfexec.nodes.base import ENTRY_POINT_GROUP
    from wfexec.system.plugins import entry_points
    from wfexec.types.registry import BUILTIN_PACKAGE

    node_dists = {ep.value.split(":")[0].strip(): ep.dist for ep in entry_points(ENTRY_POINT_GROUP) if ep.dist}
    found: set[str] = set()
    seen: set[Path] = set()

    def visit(flow: Workflow) -> None:
        if flow.path in seen:
            return
        seen.add(flow.path)
        calls = [call for node in flow.nodes.values() for call in flow.node_calls(node)]
        calls += [inner for call in flow.entry_preconditions for inner in call.walk()]
        calls += [inner for ending in flow.endings.values() for call in ending.consequences for inner in call.walk()]
        found.update(call.spec.package for call in calls if call.spec.package != BUILTIN_PACKAGE)
        for node in flow.nodes.values():
            dist = node_dists.get(getattr(node.kind.execute, "__module__", None) or "")
            if dist:
                found.add(dist)
            for child in node.kind.subworkflows(node.spec):
                visit(child)

    visit(workflow)
    found.discard(BUILTIN_PACKAGE)
    versions = {}
    for dist in sorted(found):
        try:
            versions[dist] = version(dist)
        except PackageNotFoundError:
            versions[dist] = ""
    return versions


def missing_plugins(plugins: dict) -> list[str]:
    """The plugins of a bundle this process has not installed (by distribution name; another version of one is
    installed is taken as present: its types are checked when the workflow compiles)."""
    from importlib.metadata import PackageNotFoundError, version

    missing = []
    for dist, wanted in sorted(plugins.items()):
        try:
            version(dist)
        except PackageNotFoundError:
            missing.append(f"{dist} {wanted}".strip())
    return missing


def refuse_without_plugins(plugins: dict, worker: str) -> None:
    missing = missing_plugins(plugins)
    if missing:
        raise BundleError(f"worker {worker} cannot run this workflow: it lacks the plugin"
                          f"{'s' if len(missing) > 1 else ''} {', '.join(missing)}",
                          "install the same plugins on every worker as where runs start (pip install "
                          + " ".join(name.split()[0] for name in missing) + "), then start the run again")


def bundle_folder(workdir: Path, digest: str) -> Path:
    return workdir / BUNDLES / digest


def unpacked(workdir: Path, reference: dict, data: bytes | None) -> Path | None:
    """The workflow file of the bundle, unpacked under `workdir` (once: a bundle is named by its contents).
    None when it is not there yet and `data` is None (the caller fetches it)."""
    folder = bundle_folder(workdir, reference["digest"])
    if (folder / MANIFEST).is_file():
        return folder / reference["workflow"]
    if data is None:
        return None
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{reference['digest'][:8]}-"))
    try:
        _extract(data, reference["digest"], staging)
        try:
            os.rename(staging, folder)
        except OSError:  # another run unpacked the same bundle meanwhile: the same files
            if not (folder / MANIFEST).is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder / reference["workflow"]


def _extract(data: bytes, digest: str, into: Path) -> None:
    """Write the bundle's files into `into`, each checked against the manifest, the manifest against `digest`."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            manifest_bytes = archive.read(MANIFEST)
            if sha256(manifest_bytes).hexdigest() != digest:
                raise BundleError(f"the run's workflow bundle {digest[:12]}… does not match its name",
                                  "start the run again")
            manifest = json.loads(manifest_bytes)
            for name, wanted in manifest["files"].items():
                content = archive.read("files/" + name)
                target = (into / name).resolve()
                if sha256(content).hexdigest() != wanted or not target.is_relative_to(into.resolve()):
                    raise BundleError(f"the file {name} of the run's workflow bundle {digest[:12]}… is damaged",
                                      "start the run again")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content)
            (into / MANIFEST).write_bytes(manifest_bytes)  # last: its presence says the bundle is whole
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise BundleError(f"the run's workflow bundle {digest[:12]}… cannot be read ({exc})",
                          "start the run again") from None
