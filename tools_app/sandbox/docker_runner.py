"""Host side of the in-container command runner (see runner_agent.py for the other side).

One ``RunnerConnection`` per warm container and worker process: a single long exec whose
attached stream carries JSON requests in and framed JSON events out. A reader thread routes the
events to the command that waits for them, so parallel calls in one conversation share it.

Where the image has no ``python3`` the runner cannot start; the backend then falls back to one
exec per command (and remembers that for the container).
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import queue
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

AGENT_SOURCE = (Path(__file__).with_name("runner_agent.py")).read_text()
READY_TIMEOUT = 10.0
# Longest event line we accept (a 64 KiB chunk in base64 is ~88 KB); anything longer is not
# the runner talking, and buffering it would let a command grow the worker's memory.
MAX_LINE = 512 * 1024


class RunnerUnavailable(Exception):
    """The runner could not start in this container (no python3, or it died at once)."""

    permanent = False


class _ProtocolError(Exception):
    pass


class RunnerLost(Exception):
    """The runner stopped while a command was waiting on it (container removed, killed, OOM)."""


class RunnerConnection:
    def __init__(
        self, api: Any, container_id: str, uid: int, env: list[str], idle_exit: float
    ) -> None:
        """Start the runner; ``idle_exit``: seconds it stays up with nothing to run (then the
        container has no running exec, which is what the reaper waits for)."""
        self.container_id = container_id
        self.pid = os.getpid()
        self.last_used = time.monotonic()
        self._api = api
        self._waiters: dict[str, queue.SimpleQueue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._alive = True
        self._ready: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
        exec_id = api.exec_create(
            container_id,
            ["python3", "-I", "-u", "-c", AGENT_SOURCE, str(idle_exit)],
            stdin=True,
            user=f"{uid}:{uid}",
            environment=env,
            workdir="/workspace",
        )["Id"]
        self.exec_id = str(exec_id)
        self._sock = api.exec_start(self.exec_id, socket=True)
        self._raw: socket.socket = getattr(self._sock, "_sock", self._sock)
        # The SDK leaves its request timeout on the hijacked socket: a command quiet for that
        # long would look like a dead runner.
        self._raw.settimeout(None)
        self._thread = threading.Thread(
            target=self._read, name=f"sandbox-runner-{container_id[:12]}", daemon=True
        )
        self._thread.start()
        try:
            hello = self._ready.get(timeout=READY_TIMEOUT)
        except queue.Empty:
            hello = {}
        if "ready" not in hello:
            self.close()
            why = hello.get("why") or "the runner did not start in time"
            exc = RunnerUnavailable(why)
            # The image cannot run it at all (no python3), rather than a passing problem such
            # as a full pids limit (which the engine reports as 126).
            exc.permanent = (
                "executable file not found" in why or _exit_code(api, self.exec_id) == 127
            )
            raise exc

    @property
    def alive(self) -> bool:
        return self._alive and self.pid == os.getpid()

    @property
    def busy(self) -> bool:
        return bool(self._waiters)

    def usable(self, idle_exit: float) -> bool:
        """Alive, and not about to leave on its own idle timer (a command sent just as it
        leaves would be lost)."""
        margin = min(5.0, idle_exit / 2)
        return self.alive and (self.busy or time.monotonic() - self.last_used < idle_exit - margin)

    def running(self) -> bool:
        """Whether the engine still runs the runner's exec."""
        try:
            return bool(self._api.exec_inspect(self.exec_id).get("Running"))
        except Exception:
            return False

    # -- commands ---------------------------------------------------------------------------

    def submit(
        self,
        argv: list[str],
        cwd: str,
        env: dict[str, str],
        stdin: bytes | None,
        cap: int,
        deadline: float,
    ) -> tuple[str, queue.SimpleQueue[dict[str, Any]]]:
        """Send a command; its events arrive on the returned queue. ``deadline``: seconds after
        which the runner kills it by itself (should the host stop waiting)."""
        jid = os.urandom(8).hex()
        events: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
        with self._lock:
            if not self._alive:
                raise RunnerLost("the sandbox runner has stopped")
            self._waiters[jid] = events
        self.last_used = time.monotonic()
        request = {
            "op": "run",
            "i": jid,
            "argv": [_text(a) for a in argv],
            "cwd": _text(cwd),
            "env": {_text(k): _text(v) for k, v in env.items()},
            "stdin": base64.b64encode(stdin).decode("ascii") if stdin is not None else None,
            "cap": cap,
            "deadline": deadline,
        }
        try:
            self._send(request)
        except OSError as exc:
            self.done(jid)
            self._lost()
            raise RunnerLost(f"the sandbox runner has stopped: {exc}") from exc
        return jid, events

    def kill(self, jid: str) -> None:
        with contextlib.suppress(OSError):
            self._send({"op": "kill", "i": jid})

    def done(self, jid: str) -> None:
        with self._lock:
            self._waiters.pop(jid, None)
        self.last_used = time.monotonic()

    def _send(self, msg: dict[str, Any]) -> None:
        data = (json.dumps(msg, separators=(",", ":")) + "\n").encode()
        with self._send_lock:
            self._raw.sendall(data)

    # -- the event stream -------------------------------------------------------------------

    def _read(self) -> None:
        buf = bytearray()
        lines = bytearray()
        diagnostics = bytearray()
        ready = False
        try:
            while True:
                try:
                    data = self._raw.recv(262144)
                except InterruptedError:
                    continue
                except OSError:
                    break
                if not data:
                    break
                buf += data
                for stream_id, payload in docker_frames(buf):
                    if stream_id == 2:  # the runner's own stderr: why it could not start
                        diagnostics += payload
                        del diagnostics[:-4000]
                    else:
                        lines += payload
                for line in _split_lines(lines):
                    try:
                        event = json.loads(line)
                    except ValueError:
                        event = None
                    if not isinstance(event, dict):
                        if ready:
                            raise _ProtocolError(f"not an event: {line[:200]!r}")
                        diagnostics += line[-4000:]  # e.g. the engine: python3 not found
                        del diagnostics[:-4000]
                        continue
                    ready = ready or "ready" in event
                    self._route(event)
                if len(lines) > MAX_LINE:
                    raise _ProtocolError(f"an event line longer than {MAX_LINE} bytes")
        except _ProtocolError as exc:
            logger.warning("sandbox runner in %s: %s; closing it", self.container_id[:12], exc)
        except Exception:
            logger.exception("sandbox runner stream for %s broke", self.container_id[:12])
        finally:
            why = diagnostics.decode("utf-8", "replace").strip()[-500:]
            self._ready.put({"why": why or "the runner exited"})
            self._lost(why)
            self.close()

    def _route(self, event: dict[str, Any]) -> None:
        if "ready" in event:
            self._ready.put(event)
            return
        with self._lock:
            waiter = self._waiters.get(event.get("i", ""))
        if waiter is not None:
            waiter.put(event)

    def _lost(self, why: str = "") -> None:
        with self._lock:
            self._alive = False
            waiters = list(self._waiters.values())
        for waiter in waiters:
            waiter.put({"lost": why or "the sandbox runner stopped"})

    def close(self) -> None:
        """Close our end: the runner kills what it still runs and exits. (In a forked child
        the socket is the parent's too: then only forget it.)"""
        self._alive = False
        if self.pid != os.getpid():
            return
        for close in (lambda: self._raw.shutdown(socket.SHUT_RDWR), self._sock.close):
            with contextlib.suppress(OSError):
                close()


def _text(value: str) -> str:
    """Lone surrogates cannot be passed to exec; replace them as the engine's JSON decoder
    would rather than refuse the command."""
    return value.encode("utf-8", "replace").decode("utf-8")


def docker_frames(buf: bytearray) -> Iterator[tuple[int, bytes]]:
    """Take the complete frames of docker's multiplexed stream off ``buf``: 1 byte stream id
    (1 stdout, 2 stderr), 3 padding, 4 bytes big-endian length, payload."""
    while len(buf) >= 8:
        size = int.from_bytes(buf[4:8], "big")
        if len(buf) < 8 + size:
            return
        stream_id = buf[0]
        payload = bytes(buf[8 : 8 + size])
        del buf[: 8 + size]
        yield stream_id, payload


def _split_lines(buf: bytearray) -> Iterator[bytes]:
    while True:
        end = buf.find(b"\n")
        if end < 0:
            return
        line = bytes(buf[:end])
        del buf[: end + 1]
        if line.strip():
            yield line


def _exit_code(api: Any, exec_id: str) -> int | None:
    for _ in range(50):
        with contextlib.suppress(Exception):
            info = api.exec_inspect(exec_id)
            if not info.get("Running") and info.get("ExitCode") is not None:
                return int(info["ExitCode"])
        time.sleep(0.01)
    return None
