"""How many expression units of the real hiivmind workflows compile (not a speed benchmark).

    WFEXEC_COMPAT=/work/shared/compat python bench/compat_expressions.py [commit]

A unit is one `${...}` in any string, or one `expression:` field (of compute,
evaluate, evaluate_expression). Prints the count that compile, then every failure
with its file:line:col and the message wfexec gives.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from wfexec.language.expressions import Expression, ExpressionError, Template, is_prose
from wfexec.language.loader import load_file


def units(data, path=()):
    if isinstance(data, dict):
        for key, value in data.items():
            if key == "expression" and isinstance(value, str):
                yield path + (key,), "expression", value
            else:
                yield from units(value, path + (key,))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from units(value, path + (index,))
    elif isinstance(data, str) and "${" in data:
        yield path, "template", data


def main() -> None:
    root = Path(os.environ.get("WFEXEC_COMPAT", Path(__file__).resolve().parents[2] / "shared" / "compat"))
    commit = sys.argv[1] if len(sys.argv) > 1 else "856e42a"
    files = sorted((root / "hiivmind-corpus" / commit).rglob("workflow.yaml"))
    total = passed = prose = 0
    failures = []
    for file in files:
        doc = load_file(file)
        for path, kind, text in units(doc.data):
            if kind == "template":
                count = text.count("${") - text.count("$${")
            else:
                count = 1
            total += count
            try:
                if kind == "template":
                    Template(text)
                else:
                    Expression(text)
                passed += count
            except ExpressionError as exc:
                if kind == "expression" and is_prose(text):
                    prose += 1
                    failures.append((file, path, "prose (an LLM step)", text))
                else:
                    line, column = doc.positions.get(path, (0, 0))
                    failures.append((file, path, f"{exc.message} [at {exc.line}:{exc.column} inside, "
                                                 f"value at {line}:{column}]", text))
    print(f"{passed} of {total} expression units compile ({prose} prose fields) in {len(files)} files")
    for file, path, message, text in failures:
        print(f"- {file.relative_to(root)} {'.'.join(map(str, path))}: {message}")


if __name__ == "__main__":
    main()
