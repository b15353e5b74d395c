"""What `wfexec serve` was started with, decided once: the address, the store, the roots, the token."""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from dataclasses import dataclass, field
from pathlib import Path

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]", "::1")


def is_loopback(host: str) -> bool:
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ServeConfig:
    host: str
    port: int
    store: Path
    roots: tuple[Path, ...] = ()
    read_only: bool = False
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32), repr=False)
    # Signs the CSRF field of each session; never leaves the process.
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)
    # `HOST:PORT` of a Temporal cluster whose runs are shown instead of the store's (`--temporal`).
    temporal: str | None = None
    # The command that starts a run's own process (tests may point it elsewhere; it is not user input).
    wfexec_command: tuple[str, ...] = ()

    @property
    def allowed_hosts(self) -> frozenset[str]:
        """The Host headers a request may carry: a page reached under any other name (DNS rebinding: evil.example
        resolving to 127.0.0.1) is refused before anything is read."""
        names = {self.host, *(LOOPBACK_NAMES if is_loopback(self.host) else ())}
        bracketed = {f"[{n}]" if ":" in n and not n.startswith("[") else n for n in names}
        return frozenset({*(f"{n}:{self.port}" for n in bracketed), *(bracketed if self.port == 80 else ())})

    @property
    def allowed_origins(self) -> frozenset[str]:
        return frozenset(f"http://{h}" for h in self.allowed_hosts)

    @property
    def where_runs(self) -> list[str]:
        """The command-line option that names the runs this server shows."""
        return ["--temporal", self.temporal] if self.temporal else ["--store", str(self.store)]

    def token_matches(self, given: str | None) -> bool:
        return bool(given) and hmac.compare_digest(given.encode(), self.token.encode())  # type: ignore[union-attr]

    def csrf_for(self, session: str) -> str:
        return hmac.new(self.secret, b"csrf:" + session.encode(), "sha256").hexdigest()

    @property
    def url_host(self) -> str:
        return f"[{self.host}]" if ":" in self.host and not self.host.startswith("[") else self.host

    def start_url(self) -> str:
        return f"http://{self.url_host}:{self.port}/?token={self.token}"
