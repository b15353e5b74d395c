"""`wfexec new skill NAME`: a skill folder that validates, runs end to end, and has its SKILL.md.

The folder gets `workflow.yaml` (with the `yaml-language-server` schema comment
editors read), `answers.yaml` (answers to its questions, so
`wfexec run NAME --answers NAME/answers.yaml` runs without asking),
`tests/NAME.yaml` (cases `wfexec test NAME` runs) and the generated `SKILL.md`.
An existing folder is never touched.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from wfexec.outputs.skillgen import SkillError, name_problem, suggest_name

SCHEMA_FILE = Path("schemas") / "workflow.schema.json"
V8_SCHEMA_FILE = Path("schemas") / "workflow-v8.schema.json"


def published_schema_text(plugins: bool = False, v8: bool = False) -> str:
    """The workflow JSON Schema as `wfexec schema` prints it: the built-in types (and the plugins' with `plugins`);
    with `v8`, the schema of blueprint-lib v8 files as authors write them."""
    import json

    from wfexec.language.schema import published_schema
    from wfexec.language.schema_v8 import published_v8_schema
    from wfexec.types.registry import BUILTIN_PACKAGE, Registry, consequences, preconditions

    def published(registry):
        if plugins:
            return registry
        return Registry(registry.kind, [s for s in registry.specs() if s.package == BUILTIN_PACKAGE])

    build = published_v8_schema if v8 else published_schema
    return json.dumps(build(published(preconditions()), published(consequences())), indent=2,
                      ensure_ascii=False) + "\n"


def schema_reference(folder: Path, v8: bool = False) -> tuple[str, Path | None]:
    """The schema for the editor comment, as a path relative to the folder: the nearest
    `schemas/workflow.schema.json` (`workflow-v8.schema.json` for a v8 file) above it, else one written into
    `schemas/` of the current directory (a URL would need a server, and editors and check-jsonschema read a
    file); and the schema file written, if one was."""
    from wfexec.system.files import write_atomic

    name = V8_SCHEMA_FILE if v8 else SCHEMA_FILE
    here = folder.resolve()
    for parent in here.parents:
        if (parent / name).is_file():
            return Path(os.path.relpath(parent / name, here)).as_posix(), None
    written = Path.cwd() / name
    written.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(written, published_schema_text(v8=v8))
    return Path(os.path.relpath(written, here)).as_posix(), name


def new_skill(name: str, directory: str | os.PathLike = "skills", v8: bool = False) -> list[Path]:
    """Create `directory/name/` with workflow.yaml (in blueprint-lib's v8 form with `v8`), answers.yaml,
    tests/NAME.yaml and SKILL.md; the files written (the workflow first, and last the schema its editor comment
    names, when there was none to name and one was written)."""
    from wfexec.outputs import skillgen
    from wfexec.outputs.docgen import render
    from wfexec.system.files import cannot_write, make_output_folder, write_atomic

    problem = name_problem(name)
    if problem:
        raise SkillError(f"the skill name '{name}' {problem}", f"try '{suggest_name(name)}'")
    folder = Path(directory) / name
    make_output_folder(directory, option="--dir")  # CannotWrite: a file, or a folder this user may not write in
    if folder.is_symlink():
        raise _exists(folder)
    try:
        folder.mkdir()
    except FileExistsError:
        raise _exists(folder) from None
    except OSError as exc:
        raise cannot_write(folder, exc, folder=True, option="--dir") from None
    try:
        shown = folder.as_posix()
        workflow = folder / "workflow.yaml"
        answers = folder / "answers.yaml"
        template = "workflow-v8.yaml.j2" if v8 else "workflow.yaml.j2"
        schema, schema_written = schema_reference(folder, v8)
        write_atomic(workflow, render(template, name=name, schema=schema))
        write_atomic(answers, render("answers.yaml.j2", run_path=shown, answers_path=f"{shown}/answers.yaml"))
        tests = folder / "tests" / f"{name}.yaml"
        tests.parent.mkdir()
        write_atomic(tests, render("tests.yaml.j2", name=name, run_path=shown, v8=v8))
        skill, _ = skillgen.write(folder)
    except BaseException as exc:
        shutil.rmtree(folder, ignore_errors=True)  # made by us a moment ago: leave nothing half-done
        if isinstance(exc, OSError):
            raise cannot_write(folder, exc, folder=True, option="--dir") from None
        raise
    return [workflow, answers, tests, skill, folder / skillgen.FALLBACK_FILE, *filter(None, [schema_written])]


def _exists(folder: Path) -> SkillError:
    return SkillError(f"{folder} already exists; nothing was written", "choose another name, or remove the folder first")
