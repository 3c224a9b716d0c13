"""Docker backend: one warm, hardened container per (workspace, network flag); commands are execs.

A new container per call costs 300-450 ms here, an exec into a running one ~70 ms, so containers
stay up (``sleep infinity`` under docker's tini, which reaps orphans so killed process trees do
not pile up as zombies against the pids limit) until ``release``/``reap_idle``. Their names are
deterministic so every worker process finds and reuses the same container.

Docker cannot kill an exec, so each command runs under a small shell wrapper that starts it in
its own session, writes that process group id to /tmp/.cc-run/<token> and, when the command
ends, kills whatever it left behind. Timeout/cancel kill the group from a second exec; if that
cannot run (a fork bomb fills the pids limit) the whole container is killed and recreated on the
next call. A process that deliberately starts its own session escapes the group kill but stays
inside the container's limits until the container is released or reaped.
"""

from __future__ import annotations

import contextlib
import selectors
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from tools_app.sandbox.base import (
    WORKSPACE,
    ExecRequest,
    ExecResult,
    OutputCallback,
    OutputSink,
    Sandbox,
    SandboxError,
    parse_size,
    prepare_workspace,
    sandbox_env,
)
from tools_app.sandbox.docker_containers import ContainerPool

POLL = 0.05  # cancel/timeout check interval while the command is quiet
# After timeout/cancel: how long the group kill may take before the whole container is killed
# (a fork bomb makes the kill exec wait for a free pid), then how long the engine may take to
# close the stream after that.
GROUP_KILL_GRACE = 1.0
STREAM_GRACE = 2.0

# $1 token, $2 cwd, $3... argv. A background job of a non-interactive shell is not a group
# leader, so setsid runs the command without forking and $! is the new group's id. (setsid
# itself exits 127/126 when the program is missing or not executable, like a shell.)
WRAPPER = r"""
t=$1; cd -- "$2" || exit 1; unset OLDPWD; shift 2
[ -d /tmp/.cc-run ] || mkdir -p /tmp/.cc-run
exec 3<&0
setsid -- "$@" 0<&3 3<&- &
pg=$!
exec 3<&-
echo "$pg" > "/tmp/.cc-run/$t"
wait "$pg" 2>/dev/null; rc=$?
kill -9 "-$pg" 2>/dev/null
rm -f "/tmp/.cc-run/$t"
exit "$rc"
"""
# Waits briefly for the pid file: the timeout may fire before the wrapper has written it.
# Builtins only (read, kill) so it still works when a fork bomb leaves no process slot free.
KILLER = r"""
f=/tmp/.cc-run/$1; i=0
while [ ! -s "$f" ] && [ "$i" -lt 40 ]; do sleep 0.025; i=$((i+1)); done
read pg < "$f" && kill -9 "-$pg"
"""


class DockerSandbox(Sandbox):
    name = "docker"

    def __init__(
        self,
        *,
        image: str = "controlcenter-sandbox:latest",
        uid: int = 10001,
        memory: str | int = "512m",
        pids: int = 128,
        cpus: float = 1.0,
        tmpfs_size: str = "64m",
        pool_label: str = "1",
    ) -> None:
        self.image = image
        self.uid = uid
        self.pool = ContainerPool(
            image=image,
            uid=uid,
            memory=parse_size(memory),
            pids=pids,
            cpus=cpus,
            tmpfs_size=tmpfs_size,
            label=pool_label,
        )

    @property
    def api(self) -> Any:
        return self.pool.api

    def exec(
        self,
        workspace_id: str,
        workspace_dir: Path,
        req: ExecRequest,
        *,
        on_output: OutputCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> ExecResult:
        started = time.monotonic()
        started_wall = time.time()
        ws = prepare_workspace(workspace_dir, self.uid)
        token = uuid.uuid4().hex
        cmd = ["sh", "-c", WRAPPER, "sh", token, req.cwd, *req.argv]
        env = [f"{k}={v}" for k, v in sandbox_env(req).items()]
        cid, exec_id = self._create_exec(workspace_id, ws, req, cmd, env)
        sink = OutputSink(req.max_output, on_output)
        with self.pool.errors():
            sock = self.api.exec_start(exec_id, socket=True)
        try:
            reason, container_killed = self._pump(sock, req, sink, cid, token, started, cancel)
        finally:
            _close(sock)
        sink.finish()
        exit_code = None if container_killed else self._exit_code(exec_id)
        killed_reason = reason
        if reason is None and exit_code == 137 and self.pool.oom_since(cid, started_wall):
            killed_reason = "memory limit (OOM)"
        self.pool.touch(workspace_id, req.network)
        return ExecResult(
            exit_code=None if reason else exit_code,
            stdout=sink.text("stdout"),
            stderr=sink.text("stderr"),
            truncated=sink.truncated,
            timed_out=reason == "timeout",
            cancelled=reason == "cancelled",
            duration_ms=int((time.monotonic() - started) * 1000),
            sandbox_id=cid[:12],
            killed_reason=killed_reason,
        )

    def _create_exec(
        self, workspace_id: str, ws: Path, req: ExecRequest, cmd: list[str], env: list[str]
    ) -> tuple[str, str]:
        import docker.errors

        # The warm container may have died (OOM took its init, someone removed it): one retry
        # with a freshly created container.
        for attempt in range(2):
            cid = self.pool.ensure(workspace_id, ws, network=req.network)
            with self.pool.errors():
                try:
                    created = self.api.exec_create(
                        cid,
                        cmd,
                        stdin=req.stdin is not None,
                        user=f"{self.uid}:{self.uid}",
                        environment=env,
                        workdir=WORKSPACE,
                    )
                except docker.errors.APIError as exc:
                    # 404: removed; 409: not running (dead, or still being started by another
                    # process). ensure() sorts out which. Anything else is a real engine error.
                    if attempt == 0 and exc.status_code in (404, 409):
                        self.pool.forget(workspace_id, req.network)
                        continue
                    raise
            return cid, str(created["Id"])
        raise AssertionError("unreachable")

    def _pump(
        self,
        sock: Any,
        req: ExecRequest,
        sink: OutputSink,
        cid: str,
        token: str,
        started: float,
        cancel: threading.Event | None,
    ) -> tuple[str | None, bool]:
        """Demultiplex docker's framed stream into ``sink`` until the exec ends or we give up."""
        raw = getattr(sock, "_sock", sock)
        if req.stdin is not None:
            _feed_stdin(raw, req.stdin)
        deadline = started + req.timeout
        reason: str | None = None
        killed_at = 0.0
        group_kill_failed = threading.Event()
        container_killed = False
        buf = bytearray()
        sel = selectors.DefaultSelector()
        sel.register(raw, selectors.EVENT_READ)
        try:
            while True:
                now = time.monotonic()
                if reason is None:
                    if cancel is not None and cancel.is_set():
                        reason = "cancelled"
                    elif now >= deadline:
                        reason = "timeout"
                    if reason is not None:
                        killed_at = now
                        # In a thread: keep draining output while the kill exec runs.
                        threading.Thread(
                            target=self._kill_group,
                            args=(cid, token, group_kill_failed),
                            name="sandbox-docker-kill",
                            daemon=True,
                        ).start()
                elif not container_killed:
                    if group_kill_failed.is_set() or now - killed_at >= GROUP_KILL_GRACE:
                        self.pool.kill(cid)
                        container_killed = True
                        killed_at = now
                elif now - killed_at >= STREAM_GRACE:
                    break  # the engine did not close the stream; stop waiting for it
                wait = POLL if reason else max(0.0, min(POLL, deadline - now))
                pending = getattr(raw, "pending", lambda: 0)()  # TLS may hold decrypted bytes
                if not pending and not sel.select(wait):
                    continue
                try:
                    data = raw.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    break
                if not data:
                    break
                buf += data
                _parse_frames(buf, sink)
        finally:
            sel.close()
        return reason, container_killed

    def _kill_group(self, cid: str, token: str, failed: threading.Event) -> None:
        """Kill the command's process group from a second exec; set ``failed`` if we could not."""
        try:
            with self.pool.errors():
                kill_id = self.api.exec_create(
                    cid, ["sh", "-c", KILLER, "sh", token], user=f"{self.uid}:{self.uid}"
                )["Id"]
                self.api.exec_start(kill_id)
            if self._exit_code(kill_id) != 0:
                failed.set()
        except SandboxError:
            failed.set()

    def _exit_code(self, exec_id: str) -> int | None:
        # The stream can close a moment before the engine records the exit code.
        for _ in range(250):
            with self.pool.errors():
                info = self.api.exec_inspect(exec_id)
            if not info.get("Running") and info.get("ExitCode") is not None:
                return int(info["ExitCode"])
            time.sleep(0.001)
        return None

    def release(self, workspace_id: str) -> None:
        self.pool.release(workspace_id)

    def reap_idle(self, max_idle_seconds: float) -> int:
        return self.pool.reap_idle(max_idle_seconds)

    def health(self) -> tuple[bool, str]:
        return self.pool.health()


def _parse_frames(buf: bytearray, sink: OutputSink) -> None:
    # Docker's multiplexed stream: 1 byte stream id, 3 padding, 4 bytes big-endian length.
    while len(buf) >= 8:
        size = int.from_bytes(buf[4:8], "big")
        if len(buf) < 8 + size:
            return
        sink.feed("stderr" if buf[0] == 2 else "stdout", bytes(buf[8 : 8 + size]))
        del buf[: 8 + size]


def _feed_stdin(raw: Any, data: bytes) -> None:
    def feed() -> None:
        # The command may exit without reading everything: not an error.
        with contextlib.suppress(OSError):
            raw.sendall(data)
            raw.shutdown(1)  # half-close: the command sees EOF on stdin

    threading.Thread(target=feed, name="sandbox-docker-stdin", daemon=True).start()


def _close(sock: Any) -> None:
    raw = getattr(sock, "_sock", sock)
    for close in (sock.close, raw.close):
        with contextlib.suppress(OSError):
            close()
