"""A workflow step through the MCP server against the same step through the CLI: what a Claude skill pays per
question either way.

    pip install -e '.[mcp]' && python bench/bench_mcp.py [--repeat 21]

Both run `skills/quickstart` to its ending with its one question answered up front, recorded in a store:
- CLI: `wfexec run skills/quickstart --answer ask_mood=cheerful` as a new process (wall time, from start to
  exit);
- MCP: one `run` tool call on a `wfexec mcp` server already started (the SDK's client, over stdio), as Claude
  Code makes it.
Measured alternately; medians.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tiny import parse_sized  # noqa: E402  (bench/ is on sys.path: the benches run as scripts)

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = str(ROOT / "skills" / "quickstart")


def main() -> None:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=21)
    args = parse_sized(parser, repeat=1)
    wfexec = shutil.which("wfexec") or str(Path(sys.executable).with_name("wfexec"))
    work = Path(tempfile.mkdtemp())
    env = {k: v for k, v in os.environ.items() if k != "WFEXEC_STORE"}

    def cli_call() -> float:
        start = time.perf_counter()
        subprocess.run([wfexec, "run", QUICKSTART, "--answer", "ask_mood=cheerful"], cwd=work, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        return time.perf_counter() - start

    async def measure() -> tuple[list[float], list[float]]:
        params = StdioServerParameters(command=wfexec, args=["mcp", "--root", str(ROOT / "skills")], cwd=str(work),
                                       env=env)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()

                async def mcp_call() -> float:
                    start = time.perf_counter()
                    result = await session.call_tool("run", {"path": QUICKSTART,
                                                            "answers": {"ask_mood": "cheerful"}})
                    assert result.structured_content["status"] == "completed", result
                    return time.perf_counter() - start

                await mcp_call(), cli_call()  # warm: caches filled, the server's workflow compiled
                mcp_times, cli_times = [], []
                for _ in range(args.repeat):  # alternated, so a busy moment hits both sides
                    mcp_times.append(await mcp_call())
                    cli_times.append(cli_call())
                return mcp_times, cli_times

    mcp_times, cli_times = asyncio.run(measure())
    shutil.rmtree(work, ignore_errors=True)
    m, c = statistics.median(mcp_times), statistics.median(cli_times)
    print(f"quickstart to its ending, one answer, recorded; medians of {args.repeat} (wall time)")
    print(f"CLI: a wfexec process per call : {c * 1000:8.1f} ms")
    print(f"MCP: a tool call to the server : {m * 1000:8.1f} ms")
    print(f"MCP vs CLI                     : {m / c:8.2f}x  ({c / m:.1f} times faster)")


if __name__ == "__main__":
    main()
