"""The pytest plugin (entry point `pytest11`): a skill's `tests/*.yaml` — the cases `wfexec test` runs — collected
as pytest items, so a plugin repository runs its workflows' tests with its Python tests (`pytest skills/`).

A test file is a `.yaml` in a folder named `tests` beside a `workflow.yaml`; each of its cases is one item, run
by `wfexec test`'s own runner (a fresh folder, the same `wfexec.run`), and a failing one reads as it does there.
Nothing of wfexec is imported until pytest meets such a file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def pytest_collect_file(file_path: Path, parent: Any):
    if file_path.suffix in (".yaml", ".yml") and file_path.parent.name == "tests" and \
            (file_path.parent.parent / "workflow.yaml").is_file():
        return WorkflowTests.from_parent(parent, path=file_path)
    return None


class UnusableTests(Exception):
    """A test file, or the workflow it tests, that cannot be used: what `wfexec test` prints for it."""


class CaseFailed(Exception):
    def __init__(self, result: Any):
        super().__init__(result.case.name)
        self.result = result


class WorkflowTests(pytest.File):
    def collect(self):
        from wfexec import api
        from wfexec.commands.testing import Suite, TestFileError, read_suite
        from wfexec.language.diagnostics import ERROR

        suite = Suite(self.path.resolve(), (self.path.parent.parent / "workflow.yaml").resolve())
        workflow, diagnostics = api.check_to_run(suite.workflow)
        errors = [d.format() for d in diagnostics if d.severity == ERROR]
        if workflow is None or errors:
            raise UnusableTests("\n".join(errors + [f"{suite.workflow}: not tested, the workflow has errors"]))
        try:
            cases = read_suite(suite, workflow)
        except TestFileError as exc:
            raise UnusableTests(str(exc)) from None
        for case in cases:
            yield WorkflowCase.from_parent(self, name=case.name, case=case, suite=suite, workflow=workflow)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, UnusableTests):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class WorkflowCase(pytest.Item):
    def __init__(self, *, case: Any, suite: Any, workflow: Any, **kwargs: Any):
        super().__init__(**kwargs)
        self.case, self.suite, self.workflow = case, suite, workflow
        # Plugins that wrap every test call read the item's fixtures as a test function's; pytest-lsp's wrapper
        # (1.0.1) ends without yielding, a pytest error, when an item has none.
        self.funcargs: dict[str, Any] = {}

    def runtest(self) -> None:
        from wfexec.commands.testing import run_case

        result = run_case(self.case, self.suite, self.workflow)
        if not result.passed:
            raise CaseFailed(result)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, CaseFailed):
            from wfexec.commands.testing import failure_lines

            return "\n".join([f"{self.case.place}: case '{self.case.name}' failed"] +
                             failure_lines(excinfo.value.result))
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, self.case.line - 1, f"case: {self.name}"
