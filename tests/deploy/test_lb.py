"""docker/lb/haproxy.cfg: valid for Debian's HAProxy, with and without TLS, and it does what the
web tier needs when run for real on loopback in front of a stand-in web process: health checks on
/healthz/ready with a Host the app accepts, websockets through, SSE streamed as it is written
(not buffered), forwarded headers set by the balancer and never by the client."""

from __future__ import annotations

import asyncio
import datetime
import http.client
import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.support import ROOT, tool_path
from tests.helpers import require, wait_for

CONFIG = ROOT / "docker" / "lb" / "haproxy.cfg"
TEMPLATE_LINE = "server-template web 10 web:8000 check resolvers docker init-addr none"


def _haproxy() -> str:
    exe = tool_path("haproxy")
    require(exe is not None, "haproxy is not installed (apt-get install haproxy)")
    assert exe is not None
    return exe


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _check(env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_haproxy(), "-c", "-f", str(CONFIG)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=30,
    )


def _self_signed_pem(path: Path) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    path.write_bytes(
        cert.public_bytes(serialization.Encoding.PEM)
        + key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def test_the_configuration_is_valid() -> None:
    result = _check({"LB_TLS_CERT": "", "LB_HTTPS_REDIRECT": "0"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert TEMPLATE_LINE in CONFIG.read_text()  # replicas come from Docker's DNS


def test_the_configuration_is_valid_with_tls(tmp_path: Path) -> None:
    pem = tmp_path / "site.pem"
    _self_signed_pem(pem)
    result = _check({"LB_TLS_CERT": str(pem), "LB_HTTPS_REDIRECT": "1"})
    assert result.returncode == 0, result.stdout + result.stderr
    missing = _check({"LB_TLS_CERT": str(tmp_path / "none.pem")})
    assert missing.returncode != 0  # a named certificate that is not there is an error


# --- the balancer for real, in front of a stand-in web process --------------------------------
class StandInWeb:
    """An ASGI app under uvicorn: the health endpoint, an SSE stream, a websocket echo, and a
    page that tells what headers reached it."""

    def __init__(self) -> None:
        self.health_hosts: list[str] = []
        self.release_stream = threading.Event()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        if scope["type"] == "websocket":
            await receive()  # websocket.connect
            await send({"type": "websocket.accept"})
            while True:
                message = await receive()
                if message["type"] != "websocket.receive":
                    return
                await send({"type": "websocket.send", "text": "echo:" + message["text"]})
        path = scope["path"]
        if path == "/healthz/ready":
            self.health_hosts.append(headers.get("host", ""))
            await self._reply(send, 200, b'{"ok": true}')
        elif path == "/headers":
            await self._reply(send, 200, json.dumps(headers).encode())
        elif path == "/stream":
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")],
                }
            )
            await send({"type": "http.response.body", "body": b"data: one\n\n", "more_body": True})
            # The second event waits until the test has seen the first one.
            while not self.release_stream.is_set():
                await asyncio.sleep(0.02)
            await send({"type": "http.response.body", "body": b"data: two\n\n"})
        else:
            await self._reply(send, 404, b"no")

    @staticmethod
    async def _reply(send: Any, status: int, body: bytes) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module")
def balancer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, StandInWeb]]:
    haproxy = _haproxy()
    import uvicorn

    app = StandInWeb()
    # The stand-in listens on a socket held from the start: no other process can take its port
    # between choosing it and listening (the suite shares the machine with other runs).
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    web_port = int(listener.getsockname()[1])
    lb_port, health_port = _free_port(), _free_port()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    wait_for(lambda: server.started, timeout=15, message="the stand-in web process")
    # The shipped configuration, with loopback addresses for the ports and the one replica.
    text = CONFIG.read_text()
    assert text.count(TEMPLATE_LINE) == 1 and "    bind :8000\n" in text
    text = text.replace(TEMPLATE_LINE, f"server web1 127.0.0.1:{web_port} check")
    text = text.replace("    bind :8000\n", f"    bind 127.0.0.1:{lb_port}\n")
    text = text.replace("    bind :8404\n", f"    bind 127.0.0.1:{health_port}\n")
    config = tmp_path_factory.mktemp("lb") / "haproxy.cfg"
    config.write_text(text)
    log = (config.parent / "haproxy.log").open("w")
    proc = subprocess.Popen(
        [haproxy, "-db", "-f", str(config)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "LB_TLS_CERT": "", "LB_HTTPS_REDIRECT": "0"},
    )
    try:

        def healthy() -> bool:
            assert proc.poll() is None, (config.parent / "haproxy.log").read_text()
            try:
                return _get(health_port, "/healthz")[0] == 200
            except OSError:
                return False

        # The balancer is healthy once it has a replica that passed its check.
        wait_for(healthy, timeout=20, interval=0.1, message="the balancer's health")
        yield lb_port, app
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()
        server.should_exit = True
        thread.join(timeout=10)
        listener.close()


def _get(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_replicas_are_checked_on_ready_with_a_host_the_app_accepts(
    balancer: tuple[int, StandInWeb],
) -> None:
    _port, app = balancer
    assert app.health_hosts and set(app.health_hosts) == {"localhost"}


def test_forwarded_headers_come_from_the_balancer_not_the_client(
    balancer: tuple[int, StandInWeb],
) -> None:
    port, _app = balancer
    status, body = _get(
        port, "/headers", {"X-Forwarded-For": "203.0.113.9", "X-Forwarded-Proto": "https"}
    )
    assert status == 200
    seen = json.loads(body)
    assert seen["x-forwarded-for"] == "127.0.0.1"
    assert seen["x-forwarded-proto"] == "http"


def test_server_sent_events_are_streamed_not_buffered(balancer: tuple[int, StandInWeb]) -> None:
    port, app = balancer
    app.release_stream.clear()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET /stream HTTP/1.1\r\nHost: localhost\r\n\r\n")
        received = b""
        deadline = time.monotonic() + 5
        while b"data: one" not in received and time.monotonic() < deadline:
            received += sock.recv(4096)
        # The first event came through while the response is still open.
        assert b"data: one" in received and b"data: two" not in received
        app.release_stream.set()
        while b"data: two" not in received and time.monotonic() < deadline:
            received += sock.recv(4096)
        assert b"data: two" in received


def test_websockets_pass_through(balancer: tuple[int, StandInWeb]) -> None:
    from websockets.sync.client import connect

    port, _app = balancer
    with connect(f"ws://127.0.0.1:{port}/ws/conversations/1/", open_timeout=10) as ws:
        for text in ("hello", "again"):
            ws.send(text)
            assert ws.recv(timeout=10) == "echo:" + text
