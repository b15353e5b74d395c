"""Start-up cost of each command a user (or a Claude skill, once per question) runs, as CPU time in multiples of
`python3 -c pass` and of the bare interpreter, `python3 -S -c pass`, measured alternately in the same run.

    python bench/bench_cli.py [--repeat 11] [--runs 10000] [--against OTHER_CHECKOUT] [--tiny]

`-S` skips every site hook: the floor no Python program starts under (the installed venv's own hooks are a plain
path line). The `x -S` column is the goal of issue 27 (run, resume, states: <= 6x).

Each row runs the `wfexec` console script of a non-editable install as a real process and takes the median of the
child's CPU time (user + system, from wait4). The install is made for the run: a venv of its own (`--checkout`,
default this one, installed with `pip install --no-deps`, .pyc files compiled), its dependencies read from this
interpreter's site-packages through a plain path line (no editable-install or coverage hooks run), $PYTHONPATH
unset. `--against` installs a second checkout (main, say) the same way and measures each of its rows right after
the same row of `--checkout`, in the same rounds: a before/after on one machine under the same load. `python3 -c
pass` is the interpreter running the bench, with its venv's hooks, as the goals of issue 13 were
set against it (an editable install's hooks cost about as much as the interpreter itself). Rows and their goals
(issue 13):

- `--help` <= 3x
- `run skills/quickstart --answer ask_mood=cheerful` <= 4x, the workflow unchanged since it was last loaded
- `resume` of a parked quickstart run, answering its question <= 4x
- `validate` of an unchanged workflow <= 4x
- first `validate` of the 2,204-line hiivmind refresh workflow (not in the compiled-workflow cache) <= 10x; and, for
  information, the same with nothing cached at all, as on a fresh install (skipped without ../shared/compat)
- `states` on a one-script folder <= 4x plus the script's own time (bash running it)
- `runs` with 10,000 runs in the store <= 4x
- `graph` of quickstart, no goal: a command the launcher leaves to typer
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

from tiny import parse_sized

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = ROOT / "skills" / "quickstart"
# Issue 27: a small workflow's run, resume and states within 6x the bare interpreter's CPU.
BARE_GOALS = {"run": 6, "resume": 6, "states": 6}
REFRESH = ROOT.parent / "shared" / "compat" / "hiivmind-corpus" / "856e42a" / "skills" / "hiivmind-corpus-refresh"


def cpu_seconds(argv: list[str], cwd: Path, env: dict) -> float:
    """The CPU time (user + system) of one run of `argv` and everything it started."""
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in (0, 2, 3):  # 2: the refresh workflow has an error wfexec reports
        raise SystemExit(f"{' '.join(argv)} exited {process.returncode}")
    return usage.ru_utime + usage.ru_stime


def install(checkout: Path, work: Path) -> Path:
    """A non-editable install of `checkout` (and of its compat plugin) in a venv of its own: its `bin` folder."""
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    # The dependencies: this interpreter's site-packages as plain path entries, after the venv's own (so the
    # install is found first); .pth files there are not run from a path line, so no editable hook is.
    dependencies = [entry for entry in sys.path if entry.endswith("site-packages")]
    Path(site, "bench_dependencies.pth").write_text("\n".join(dependencies) + "\n")
    packages = [str(checkout)] + [str(p) for p in (checkout / "plugins").glob("*/pyproject.toml")]
    packages = [str(Path(p).parent) if p.endswith("pyproject.toml") else p for p in packages]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    command = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", *packages]
    # Built with this interpreter's setuptools when it has them; else pip fetches them, as for any build.
    if subprocess.run([*command, "--no-build-isolation"], env=env, cwd=work, stdout=subprocess.DEVNULL).returncode:
        subprocess.run(command, check=True, env=env, cwd=work, stdout=subprocess.DEVNULL)
    return venv / "bin"


FILL = """
import sys
from wfexec.durable.store import Store

opened = Store(sys.argv[1])
try:
    with opened.transaction():
        for index in range(int(sys.argv[2])):
            opened.create_run(workflow_path=sys.argv[3], workflow_name="quickstart", workflow_hash="0" * 16,
                              node_hashes={}, inputs={"n": index}, state={}, start_node="greet")
finally:
    opened.close()
"""


def fill_store(interpreter: str, store: Path, runs: int, env: dict) -> None:
    """`runs` runs in a new store, written by the installed wfexec (its store schema)."""
    subprocess.run([interpreter, "-c", FILL, str(store), str(runs), str(QUICKSTART / "workflow.yaml")], env=env,
                   check=True)


class Install:
    """One checkout installed for the bench, with the stores, caches and parked runs its rows use."""

    def __init__(self, checkout: Path, work: Path, runs: int, repeat: int):
        work.mkdir(parents=True)
        self.checkout = checkout
        self.work = work
        binaries = install(checkout, work)
        self.wfexec, self.interpreter = str(binaries / "wfexec"), str(binaries / "python")
        compileall.compile_dir(binaries.parent / "lib", quiet=1)
        self.env = {**os.environ, "WFEXEC_CACHE_DIR": str(work / "cache"), "NO_COLOR": "1"}
        self.env.pop("WFEXEC_STORE", None)
        self.env.pop("PYTHONPATH", None)  # the install, not a checkout on the path
        self.store = work / "runs.db"
        self.many = work / "many.db"
        fill_store(self.interpreter, self.many, runs, self.env)
        self.flow = work / "flow"
        self.flow.mkdir()
        (self.flow / "START.sh").write_text("echo '<result>ok</result>'\n")
        self.parked = [self.park() for _ in range(repeat + 1)]
        self.cold_cache = work / "cold-cache"  # its own: emptying it leaves the other rows' entries alone
        self.warm_cache = work / "warm-cache"  # wfexec has run before (validators, plugin index), this workflow not
        subprocess.run([self.wfexec, "validate", str(QUICKSTART)], cwd=work,
                       env={**self.env, "WFEXEC_CACHE_DIR": str(self.warm_cache)}, capture_output=True)
        for argv in ([self.wfexec, "--help"], [self.wfexec, "validate", str(QUICKSTART)]):  # fill the caches once
            cpu_seconds(argv, work, self.env)

    def park(self) -> str:
        done = subprocess.run([self.wfexec, "run", str(QUICKSTART), "--store", str(self.store), "--format", "json"],
                              cwd=self.work, env=self.env, capture_output=True, text=True)
        assert done.returncode == 3, done.stderr
        return json.loads(done.stdout)["run_id"]

    def resume_next(self) -> list[str]:
        return [self.wfexec, "resume", self.parked.pop(), "--answer", "ask_mood=cheerful", "--store", str(self.store)]

    def first_load_refresh(self) -> list[str]:
        shutil.rmtree(self.warm_cache / "workflows", ignore_errors=True)
        return ["env", f"WFEXEC_CACHE_DIR={self.warm_cache}", self.wfexec, "validate", str(REFRESH)]

    def fresh_install_refresh(self) -> list[str]:
        shutil.rmtree(self.cold_cache, ignore_errors=True)
        return ["env", f"WFEXEC_CACHE_DIR={self.cold_cache}", self.wfexec, "validate", str(REFRESH)]

    def rows(self, runs: int) -> list[tuple[str, Callable[[], list[str]], int | None, list[str] | None]]:
        """(name, the command line of its next run, its goal against `python3 -c pass`, the part of its CPU that
        is not wfexec's: a command whose CPU is subtracted)."""
        wfexec = self.wfexec
        return [
            ("--help", lambda: [wfexec, "--help"], 3, None),
            ("run quickstart", lambda: [wfexec, "run", str(QUICKSTART), "--answer", "ask_mood=cheerful",
                                        "--ephemeral"], 4, None),
            ("resume (answer)", self.resume_next, 4, None),
            ("validate quickstart", lambda: [wfexec, "validate", str(QUICKSTART)], 4, None),
            ("refresh, first load", self.first_load_refresh, 10, None),
            ("refresh, nothing cached", self.fresh_install_refresh, None, None),
            ("states one script", lambda: [wfexec, "states", str(self.flow)], 4, ["bash", str(self.flow / "START.sh")]),
            (f"runs ({runs:,} in store)", lambda: [wfexec, "runs", "--store", str(self.many)], 4, None),
            # No goal: what a command the launcher leaves to typer costs (typer 0.29 builds each option's converter
            # with pydantic, about 0.25 s more than 0.28 did).
            ("graph quickstart (typer)", lambda: [wfexec, "graph", str(QUICKSTART)], None, None),
        ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--runs", type=int, default=10_000, help="runs in the store `runs` lists")
    parser.add_argument("--checkout", type=Path, default=ROOT,
                        help="the wfexec checkout to install and measure (another worktree, to compare)")
    parser.add_argument("--against", type=Path, default=None,
                        help="another checkout, installed too and measured alternately with --checkout: its "
                             "table follows, measured in the same rounds")
    args = parse_sized(parser, repeat=1, runs=50)

    work = Path(tempfile.mkdtemp(prefix="bench-cli-"))
    try:
        measure(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)  # a venv per checkout: no bench keeps anything


def measure(args, work: Path) -> None:
    checkouts = [args.checkout.resolve()] + ([args.against.resolve()] if args.against else [])
    installs = [Install(checkout, work / f"install-{index}", args.runs, args.repeat)
                for index, checkout in enumerate(checkouts)]
    rows = [install.rows(args.runs) for install in installs]
    if not REFRESH.exists() or args.tiny:
        rows = [[row for row in own if "refresh" not in row[0]] for own in rows]
        print(f"(no {REFRESH}, or --tiny: the refresh rows are skipped)")
    bare = [installs[0].interpreter, "-S", "-c", "pass"]
    samples: dict[str, list[float]] = {"python3 -c pass": [], "python3 -S -c pass": []}
    for index, own in enumerate(rows):
        for name, *_ in own:
            samples[f"{index} {name}"] = []
            samples[f"{index} {name} (own)"] = []
    for _ in range(args.repeat):  # alternate: the baselines before every row, so load changes hit every side
        for at in range(len(rows[0])):
            samples["python3 -c pass"].append(cpu_seconds([sys.executable, "-c", "pass"], work, installs[0].env))
            samples["python3 -S -c pass"].append(cpu_seconds(bare, work, installs[0].env))
            for index, (install, own) in enumerate(zip(installs, rows)):
                name, argv, _goal, extra = own[at]
                samples[f"{index} {name}"].append(cpu_seconds(argv(), install.work, install.env))
                if extra:
                    samples[f"{index} {name} (own)"].append(cpu_seconds(extra, install.work, install.env))
    base = statistics.median(samples["python3 -c pass"])
    floor = statistics.median(samples["python3 -S -c pass"])
    print(f"python3 -c pass: {base * 1000:.1f} ms CPU, python3 -S -c pass: {floor * 1000:.1f} ms CPU "
          f"(medians of {len(samples['python3 -c pass'])})")
    for index, (install, own) in enumerate(zip(installs, rows)):
        print(f"wfexec installed (not editable) from {install.checkout} into a venv of its own")
        print(f"{'command':<26}{'CPU ms':>9}{'x pass':>9}{'goal':>7}{'x -S':>10}{'goal':>7}")
        for name, _argv, goal, extra in own:
            ours = statistics.median(samples[f"{index} {name}"])
            subtracted = statistics.median(samples[f"{index} {name} (own)"]) if extra else 0.0
            ratio, bare_ratio = (ours - subtracted) / base, (ours - subtracted) / floor
            note = f"  (less the script's own {subtracted * 1000:.1f} ms)" if extra else ""
            verdict = "-" if goal is None else ("ok" if ratio <= goal else "OVER")
            shown_goal = f"{goal:6}x" if goal is not None else "      -"
            bare_goal = BARE_GOALS.get(name.split()[0])
            bare_verdict = f"{bare_goal:6}x {'ok' if bare_ratio <= bare_goal else 'OVER'}" if bare_goal else "      -"
            print(f"{name:<26}{ours * 1000:9.1f}{ratio:8.2f}x{shown_goal}  {verdict:<4}{bare_ratio:7.2f}x"
                  f"{bare_verdict}{note}")


if __name__ == "__main__":
    main()
