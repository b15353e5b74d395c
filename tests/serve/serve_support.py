"""What the tests of `wfexec serve` share: a small workflow that asks, real runs of it started at the command
line, the app behind Starlette's TestClient, and a real server process on a free port of 127.0.0.1."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import wfexec_cli, with_coverage

ASKS = """\
name: greeter
version: "1.0.0"
description: Asks how to greet, then greets.
start_node: ask
input_schema:
  type: object
  additionalProperties: false
  properties:
    who: {type: string, description: Whom to greet}
initial_state:
  who: world
nodes:
  ask:
    type: user_prompt
    prompt:
      question: "Greet ${who} how?"
      header: Greeting
      options:
        - {id: warm, label: Warmly}
        - {id: plain, label: Plainly}
    on_response:
      warm: {next_node: note_warm}
      plain: {next_node: greet}
  note_warm:
    type: action
    actions:
      - {type: set_flag, flag: warm, value: true}
    on_success: greet
    on_failure: failed
  greet:
    type: action
    actions:
      - {type: set_state, field: computed.greeting, value: "Hello, ${who}"}
    on_success: done
    on_failure: failed
endings:
  done: {type: success, message: "${computed.greeting}"}
  failed: {type: failure, message: failed}
"""

# Goes through its nodes only as the test lets it: each step waits for a file of the folder `gates` to appear,
# and the middle one writes a batch of output lines before each gate (what the page follows).
GATED = """\
name: gated
version: "1.0.0"
description: Steps that wait for the test's word, and write output meanwhile.
start_node: prepare
input_schema:
  type: object
  additionalProperties: false
  required: [gates]
  properties:
    gates: {type: string, description: the folder whose files let each step end}
nodes:
  prepare:
    type: action
    actions:
      - {type: run_command, command: [bash, -c, 'while [ ! -e "$1/one" ]; do sleep 0.05; done', gate, "${gates}"]}
    on_success: build
    on_failure: failed
  build:
    type: action
    actions:
      - type: run_command
        command: [bash, -c, 'for b in two three four; do for i in $(seq 1 40); do echo "$b line $i"; done; while [ ! -e "$1/$b" ]; do sleep 0.05; done; done', build, "${gates}"]
    on_success: check
    on_failure: failed
  check:
    type: user_prompt
    prompt:
      question: Ship it?
      options:
        - {id: yes, label: Ship}
        - {id: no, label: Hold}
    on_response:
      yes: {next_node: done}
      no: {next_node: failed}
endings:
  done: {type: success, message: shipped}
  failed: {type: failure, message: held}
"""

BROKEN = """\
name: broken
version: "1.0.0"
start_node: nowhere
nodes: {}
endings:
  done: {type: success, message: ok}
"""

URL = re.compile(r"^http://127\.0\.0\.1:(\d+)/\?token=(\S+)$")


# Its inputs written as hiivmind files write them: name → schema, `required: true` beside the type.
NAMED_INPUTS = """\
name: named
version: "1"
start_node: greet
input_schema:
  who: {type: string, required: true, description: Whom to greet}
  punctuation: {type: string, default: "!"}
nodes:
  greet:
    type: action
    actions: [{type: set_state, field: computed.line, value: "Hello, ${input.who}${input.punctuation}"}]
    on_success: done
endings:
  done: {type: success, message: "${computed.line}"}
"""


def workflows(root: Path) -> Path:
    """`root`/greeter/workflow.yaml (asks), `root`/gated/workflow.yaml (goes on as files appear),
    `root`/named/workflow.yaml (inputs as name → schema) and `root`/broken/workflow.yaml (does not validate)."""
    for name, text in (("greeter", ASKS), ("broken", BROKEN), ("gated", GATED), ("named", NAMED_INPUTS)):
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / "workflow.yaml").write_text(text, encoding="utf-8")
    return root


def waiting_run(workflow: Path, *inputs: str) -> str:
    """A run started at the command line, as a person would, left waiting on its question: its id."""
    args = [a for i in inputs for a in ("--input", i)]
    done = wfexec_cli("run", workflow, "--non-interactive", "--format", "json", *args)
    assert done.returncode == 3, done.stderr
    return json.loads(done.stdout)["run_id"]


def once_waiting(api, run_id: str) -> dict:
    """The run as the server shows it once it has stopped running (waiting for an answer, say): a launch returns
    when its process has taken the run, before the run reaches its question."""
    deadline = time.monotonic() + 60
    while True:
        shown = api.get(f"/api/runs/{run_id}").json()
        if shown["status"] != "running" or time.monotonic() > deadline:
            return shown
        time.sleep(0.05)


def config(store: Path, roots=(), read_only=False, port=8765):
    from wfexec.serve.config import ServeConfig

    return ServeConfig(host="127.0.0.1", port=port, store=store, roots=tuple(roots), read_only=read_only)


def client(cfg):
    from starlette.testclient import TestClient

    from wfexec.serve.app import create_app

    return TestClient(create_app(cfg), base_url=f"http://127.0.0.1:{cfg.port}", follow_redirects=False)


def signed_in(test_client, cfg) -> str:
    """Trade the token for the session cookie, as the browser does with the printed address; the page's CSRF
    field."""
    answer = test_client.get(f"/?token={cfg.token}")
    assert answer.status_code == 303, answer.text
    page = test_client.get("/")
    found = re.search(r'<meta name="csrf" content="([^"]+)">', page.text)
    assert found, page.text
    return found.group(1)


def origin(cfg) -> str:
    return f"http://127.0.0.1:{cfg.port}"


@dataclass
class Live:
    process: subprocess.Popen
    port: int
    token: str

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def start_url(self) -> str:
        return f"{self.base}/?token={self.token}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_server(store: Path | None, *args: str, env: dict | None = None) -> Live:
    """`wfexec serve` for real, on a free port of 127.0.0.1 (it binds port 0 and prints the one it got): the
    address is its first line, printed once it listens. `store` None: no --store (give --temporal in `args`)."""
    environment = with_coverage({**os.environ, **(env or {}), **({"WFEXEC_STORE": str(store)} if store else {})})
    where = ["--store", str(store)] if store is not None else []
    process = subprocess.Popen([sys.executable, "-m", "wfexec", "serve", "--port", "0", *where, *args],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)
    line = process.stdout.readline().strip()
    found = URL.match(line)
    if not found:
        process.kill()
        raise AssertionError(f"wfexec serve printed {line!r}; stderr: {process.stderr.read()}")
    return Live(process, int(found.group(1)), found.group(2))


@pytest.fixture
def root(tmp_path):
    """The example workflows the server offers (`--root`)."""
    return workflows(tmp_path / "workflows")


@pytest.fixture
def api(root, private_run_store):
    """The app, through Starlette's test client, with the token as a bearer."""
    cfg = config(private_run_store, roots=[root])
    with client(cfg) as c:
        c.headers["Authorization"] = f"Bearer {cfg.token}"
        yield c
