"""The sandbox is the boundary when policy misses: each attack is its own case, per backend,
and after every bomb the same sandbox must still answer ``echo ok``."""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from tests.sandbox import ISOLATED
from tests.sandbox.conftest import Box
from tools_app.sandbox import SandboxError

pytestmark = pytest.mark.parametrize("box", ISOLATED, indirect=True)


def assert_still_usable(box: Box) -> None:
    result = box.run("echo", "ok", timeout=30)
    assert (result.exit_code, result.stdout) == (0, "ok\n"), result


BOMBS = {
    # The classic: dies back as forks fail, but floods the limit first.
    "sh": ["sh", "-c", "bomb() { bomb | bomb & }; bomb; sleep 30"],
    # The stubborn one: every process keeps retrying, so the limit stays full until we kill it.
    "python": [
        "python3",
        "-c",
        "import os, time\nwhile True:\n    try:\n        os.fork()\n"
        "    except OSError:\n        time.sleep(0.01)",
    ],
}


@pytest.mark.parametrize("bomb", BOMBS)
def test_it_holds_a_fork_bomb(box: Box, bomb: str) -> None:
    started = time.monotonic()
    result = box.run(*BOMBS[bomb], timeout=2)
    assert time.monotonic() - started < 8
    assert result.timed_out or result.exit_code != 0
    assert_still_usable(box)


def test_it_contains_a_memory_bomb(box: Box) -> None:
    # Two GiB that are really written (b"x" * n touches every page), against a 512 MiB limit.
    result = box.run("python3", "-c", "x = b'x' * (2 * 1024**3); print('allocated')", timeout=30)
    assert not result.timed_out
    assert result.exit_code != 0
    assert "allocated" not in result.stdout
    if box.name == "docker":
        assert result.exit_code == 137
        assert result.killed_reason == "memory limit (OOM)"
    else:  # no memory cgroup for bubblewrap: RLIMIT_AS makes the allocation fail
        assert "MemoryError" in result.stderr
    assert_still_usable(box)


def test_it_kills_an_infinite_loop(box: Box) -> None:
    started = time.monotonic()
    result = box.sh("while :; do :; done", timeout=1)
    assert result.timed_out and result.exit_code is None
    assert time.monotonic() - started < 3
    assert_still_usable(box)


def test_it_caps_a_flood_of_output(box: Box) -> None:
    started = time.monotonic()
    result = box.sh("yes | head -c 100000000", timeout=60)
    elapsed = time.monotonic() - started
    assert result.exit_code == 0
    assert result.truncated is True
    assert len(result.stdout) == 1_000_000
    assert elapsed < 20, f"100 MB took {elapsed:.1f} s"
    assert_still_usable(box)


def test_it_cannot_write_outside_the_workspace(box: Box) -> None:
    probe = f"cc-probe-{uuid.uuid4().hex[:8]}"
    dirs = ["/", "/etc", "/usr", "/usr/bin", "/var", "/root", "/home", "/bin"]
    script = "; ".join(f"touch {d.rstrip('/')}/{probe} 2>/dev/null && echo WROTE {d}" for d in dirs)
    result = box.sh(f"{script}; touch /tmp/{probe} && echo tmp-ok; touch {probe} && echo ws-ok")
    assert "WROTE" not in result.stdout
    assert "tmp-ok" in result.stdout and "ws-ok" in result.stdout
    for d in dirs:
        assert not (Path(d) / probe).exists(), f"{d}/{probe} appeared on the host"


@pytest.fixture
def canary(sandbox_base: Path) -> Iterator[tuple[Path, str]]:
    # World-readable on the host: only the sandbox itself may stand between it and a command.
    secret = uuid.uuid4().hex
    folder = sandbox_base / f"secrets-{secret[:8]}"
    folder.mkdir()
    folder.chmod(0o755)
    path = folder / "secret_key"
    path.write_text(secret)
    path.chmod(0o644)
    yield path, secret


def test_it_cannot_read_host_secrets(
    box: Box, canary: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, secret = canary
    monkeypatch.setenv("CC_CANARY_SECRET", secret)  # in the host process's environment
    probes = [
        f"cat {path}",
        f"ls {path.parent}",
        "cat /etc/shadow",
        "ls /root",
        "cat /work/main/var/secret_key",
        "ls /work/main",
    ]
    script = "; ".join(f"{p} >/dev/null 2>&1 && echo 'READ {p}'" for p in probes)
    result = box.sh(f"{script}; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'; echo end")
    assert result.stdout.endswith("end\n")
    assert "READ" not in result.stdout
    assert secret not in result.stdout + result.stderr


@pytest.fixture
def host_server() -> Iterator[tuple[int, list[str]]]:
    """A TCP server on the host (all addresses) that records every connection it gets."""
    hits: list[str] = []
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("0.0.0.0", 0))
    server.listen(16)
    server.settimeout(0.1)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, addr = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            hits.append(addr[0])
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], hits
    stop.set()
    thread.join(2)
    server.close()


def _host_addresses() -> list[str]:
    addresses = {"127.0.0.1"}
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the route
        addresses.add(probe.getsockname()[0])
    except OSError:
        pass
    finally:
        probe.close()
    return sorted(addresses)


CONNECT = """
import socket, sys
for host in sys.argv[2:]:
    try:
        socket.create_connection((host, int(sys.argv[1])), timeout=2).close()
        print("CONNECTED", host)
    except OSError as exc:
        print("refused", host, exc)
"""
RESOLVE = """
import socket
try:
    print("RESOLVED", socket.getaddrinfo("example.com", 443)[0][4])
except OSError as exc:
    print("no dns", exc)
"""


def test_it_has_no_network_when_off(box: Box, host_server: tuple[int, list[str]]) -> None:
    port, hits = host_server
    result = box.run("python3", "-c", CONNECT, str(port), *_host_addresses(), timeout=30)
    assert result.exit_code == 0, result.stderr
    assert "CONNECTED" not in result.stdout
    assert "no dns" in box.run("python3", "-c", RESOLVE, timeout=30).stdout
    time.sleep(0.2)
    assert hits == []


def test_it_reaches_the_network_only_when_asked(
    box: Box, host_server: tuple[int, list[str]]
) -> None:
    # The positive control for the test above: the same probe does connect with network=True.
    port, hits = host_server
    if box.name == "bubblewrap":
        # --share-net would be the host's own namespace, loopback services included: refused.
        with pytest.raises(SandboxError, match="loopback"):
            box.run("true", network=True)
        assert hits == []
        return
    host = "127.0.0.1"
    if box.name == "docker":
        box.run("true", network=True)
        net = box.sandbox.api.inspect_network("cc-sandbox-net")  # type: ignore[attr-defined]
        host = net["IPAM"]["Config"][0]["Gateway"]
    result = box.run("python3", "-c", CONNECT, str(port), host, network=True, timeout=30)
    assert f"CONNECTED {host}" in result.stdout
    assert len(hits) == 1


def test_it_never_runs_as_root(box: Box) -> None:
    result = box.sh("id -u; id -g; grep -E '^(CapEff|CapPrm|NoNewPrivs)' /proc/self/status")
    lines = result.stdout.split()
    assert lines[0] == lines[1] == str(settings.SANDBOX_UID)
    status = dict(zip(lines[2::2], lines[3::2], strict=True))
    assert status["CapEff:"] == status["CapPrm:"] == "0000000000000000"
    assert status["NoNewPrivs:"] == "1"
