"""States archives fetched from a URL (issue 30, point 5), against an HTTP server on 127.0.0.1 that the test starts:
the SHA-256 in the file name is checked, the archive is cached in `.raymond/registry/`, the size cap of local zips
applies, and a cross-workflow tag may name such a URL too."""

from __future__ import annotations

import hashlib
import http.server
import io
import threading
import zipfile
from functools import partial

import pytest
from conftest import wfexec_in_process as cli


def zip_bytes(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


@pytest.fixture
def server(tmp_path):
    """An HTTP server on 127.0.0.1 serving tmp_path/site; yields (publish(name, bytes) -> url, requests list)."""
    site = tmp_path / "site"
    site.mkdir()
    requests: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            requests.append(self.path)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()

    def publish(name: str, data: bytes) -> str:
        (site / name).write_bytes(data)
        return f"http://127.0.0.1:{httpd.server_address[1]}/{name}"

    yield publish, requests, httpd
    httpd.shutdown()
    httpd.server_close()


def test_a_zip_from_a_url_runs_and_is_fetched_once(tmp_path, server):
    publish, requests, httpd = server
    (tmp_path / ".git").mkdir()
    data = zip_bytes({"START.sh": 'echo "<result>remote $RAYMOND_INPUT</result>"\n'})
    digest = hashlib.sha256(data).hexdigest()
    url = publish(f"review-{digest}.zip", data)
    ran = cli("states", url, "--input", "hello", "--no-debug", cwd=tmp_path)
    assert (ran.returncode, ran.stdout) == (0, "remote hello\n"), ran.stderr
    assert (tmp_path / ".raymond" / "registry" / f"{digest}.zip").read_bytes() == data
    httpd.shutdown()  # cached: no second download
    again = cli("states", url, "--input", "again", "--no-debug", cwd=tmp_path)
    assert (again.returncode, again.stdout) == (0, "remote again\n"), again.stderr
    assert len([r for r in requests if "review-" in r]) == 1


def test_what_a_url_zip_is_refused_for(tmp_path, server, monkeypatch):
    publish, _, _ = server
    data = zip_bytes({"START.sh": "echo '<result>x</result>'\n"})
    digest = hashlib.sha256(data).hexdigest()
    wrong = publish(f"flow-{'0' * 64}.zip", data)
    refused = cli("states", wrong, cwd=tmp_path)
    assert refused.returncode == 2 and f"does not match the SHA-256 in its name (its content hashes to {digest})" in \
        refused.stderr
    unnamed = publish("flow.zip", data)
    refused = cli("states", unnamed, cwd=tmp_path)
    assert refused.returncode == 2 and "whose file name holds its SHA-256 once" in refused.stderr
    missing = cli("states", unnamed.replace("flow.zip", f"gone-{digest}.zip"), cwd=tmp_path)
    assert missing.returncode == 2 and "could not be fetched: HTTP 404" in missing.stderr
    ftp = cli("states", f"ftp://127.0.0.1/x-{digest}.zip", cwd=tmp_path)
    assert ftp.returncode == 2 and "only http:// and https://" in ftp.stderr
    # The cap of a local zip's size is a download's too.
    import wfexec.protocol.archives as archives

    monkeypatch.setattr(archives, "MAX_ZIP_BYTES", 100)
    big = zip_bytes({"START.sh": "echo '<result>x</result>'\n" + "#" * 500})
    big_url = publish(f"big-{hashlib.sha256(big).hexdigest()}.zip", big)
    refused = cli("states", big_url, cwd=tmp_path)
    assert refused.returncode == 2 and "more than a states archive may be (100)" in refused.stderr
    (tmp_path / "big.zip").write_bytes(big)
    local = cli("states", "big.zip", cwd=tmp_path)
    assert local.returncode == 2 and "more than a states archive may hold (100)" in local.stderr


def test_a_cross_workflow_tag_may_name_a_url(tmp_path, server):
    publish, _, _ = server
    data = zip_bytes({"START.sh": 'echo "<result>child got $RAYMOND_INPUT</result>"\n'})
    url = publish(f"child-{hashlib.sha256(data).hexdigest()}.zip", data)
    flow = tmp_path / "flow"
    flow.mkdir()
    (flow / "START.sh").write_text(f"echo '<call-workflow return=\"AFTER\" input=\"hi\">{url}</call-workflow>'\n")
    (flow / "AFTER.sh").write_text('echo "<result>$RAYMOND_INPUT</result>"\n')
    ran = cli("states", "flow", "--no-debug", cwd=tmp_path)
    assert (ran.returncode, ran.stdout) == (0, "child got hi\n"), ran.stderr
