"""`wfexec serve`: check what was asked, bind the socket, print the address with its token, serve until Ctrl-C."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

from wfexec.exit_codes import exit_code_for

MIN_TOKEN = 16


def _error(text: str) -> int:
    print(f"error: {text}", file=sys.stderr)
    return exit_code_for("invalid")


def _read_token(token_file: Path) -> str | None:
    try:
        token = token_file.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        print(f"error: --token-file {token_file} cannot be read ({getattr(exc, 'strerror', None) or exc})",
              file=sys.stderr)
        return None
    if len(token) < MIN_TOKEN or any(c.isspace() for c in token):
        print(f"error: --token-file {token_file} must hold one token of at least {MIN_TOKEN} characters, without "
              "spaces (e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))' > FILE`)", file=sys.stderr)
        return None
    return token


def serve(host: str = "127.0.0.1", port: int = 8765, store: Path | None = None, roots: Sequence[Path] = (),
          read_only: bool = False, token_file: Path | None = None, temporal: str | None = None,
          debug: bool = False) -> int:
    from importlib.util import find_spec

    # multipart: python-multipart, which reads the forms' bodies.
    if any(find_spec(name) is None for name in ("uvicorn", "starlette", "sse_starlette", "multipart")):
        return _error("`wfexec serve` needs the web extra — pip install 'wfexec[serve]'")
    import socket

    from wfexec.durable.store import StoreError, open_store, store_location
    from wfexec.serve.config import ServeConfig, is_loopback

    if not is_loopback(host):
        if token_file is None:
            return _error(f"--host {host} lets other machines reach the runs; it needs --token-file FILE with a "
                          "token you chose (and keep secret), or leave --host at 127.0.0.1")
        print(f"warning: serving on {host}: anyone who can reach it and knows the token can see, answer and "
              "cancel runs; the traffic is not encrypted (put it behind TLS)", file=sys.stderr)
    token = _read_token(token_file) if token_file is not None else None
    if token_file is not None and token is None:
        return exit_code_for("invalid")
    for root in roots:
        if not root.is_dir():
            return _error(f"--root {root} is not a folder")
    if temporal:
        problem = _cluster_problem(temporal)
        if problem is not None:
            print(problem.format(), file=sys.stderr)
            return exit_code_for(problem)
    location = store_location(store).absolute()
    if location.exists() and not temporal:
        try:
            open_store(location, readonly=True).close()
        except StoreError as exc:
            print(exc.format(), file=sys.stderr)
            return exit_code_for(exc)
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        return _error(f"cannot listen on {host}:{port} ({exc.strerror or exc}) — "
                      + ("pass --port N (0: any free port)" if exc.errno == 98 else "check --host"))
    sock.listen(128)
    bound = sock.getsockname()[1]
    config = ServeConfig(host=host.strip("[]"), port=bound, store=location, roots=tuple(roots),
                         read_only=read_only, temporal=temporal or None)
    if token:
        from dataclasses import replace

        config = replace(config, token=token)
    return _run(config, sock, debug)


def _cluster_problem(address: str):
    """Why the cluster cannot be used (the extra is missing, it cannot be reached), said before listening."""
    import asyncio

    from wfexec.errors import WfexecError
    from wfexec.temporal import require_temporalio

    try:
        require_temporalio()
        from wfexec.temporal.client import connect

        asyncio.run(connect(address))
    except WfexecError as exc:
        return exc
    return None


def _run(config, sock, debug: bool) -> int:
    import uvicorn

    from wfexec.serve.app import create_app

    app = create_app(config)

    class Server(uvicorn.Server):
        def handle_exit(self, sig, frame) -> None:
            app.state.server.view.close()  # open event streams end now rather than hold the shutdown up
            super().handle_exit(sig, frame)

    # No access log: the first request's line would carry the token. Streams end at their next look (a fraction of
    # a second); the graceful wait only bounds a loaded machine, after which uvicorn closes what is left.
    server = Server(uvicorn.Config(app, log_level="debug" if debug else "warning", access_log=False,
                                   lifespan="off", timeout_graceful_shutdown=3))
    where = f"the Temporal cluster at {config.temporal}" if config.temporal else str(config.store)
    print(f"wfexec serve: runs in {where}" + (" (read-only)" if config.read_only else ""), file=sys.stderr)
    print(config.start_url(), flush=True)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn hands Ctrl-C back once it has shut down: stopping a server is no failure
        pass
    return 0
