"""Docker backend: one warm, hardened container per (workspace, network flag).

A new container per call costs 300-450 ms here, an exec into a running one 60-100 ms, so
containers stay up (``sleep infinity`` under docker's tini, which reaps orphans so killed process
trees do not pile up as zombies against the pids limit) until ``release``/``reap_idle``. Their
names are deterministic so every worker process finds and reuses the same container.

Commands go to a runner that each worker process keeps inside the container (one long exec of
``runner_agent.py``; see ``docker_runner``): it spawns each command in its own session, streams
its output, and kills the whole group when the leader exits or on timeout/cancel — a few ms per
command instead of an exec's tens. If the runner does not answer a kill, the container is
killed and recreated on the next call.

Images without ``python3`` (or ``SANDBOX_DOCKER_RUNNER=0``) get one exec per command instead.
Docker cannot kill an exec, so each such command runs under a small shell wrapper that starts it
in its own session, writes that process group id to /tmp/.cc-run/<token> and, when the command
ends, kills whatever it left behind; timeout/cancel kill the group from a second exec.

Either way a process that deliberately starts its own session escapes the group kill but stays
inside the container's limits until the container is released or reaped.

A long-lived process (``spawn``: a stdio MCP server) gets a container of its own, made from the
same hardening profile (``hardening``), which the engine removes when the process ends.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import queue
import selectors
import shutil
import threading
import time
import uuid
import weakref
from pathlib import Path
from typing import Any

from tools_app.sandbox.base import (
    DEFAULT_PATH,
    WORKSPACE,
    ExecRequest,
    ExecResult,
    Mount,
    OutputCallback,
    OutputSink,
    Sandbox,
    SandboxError,
    Spawned,
    SpawnRequest,
    parse_size,
    prepare_workspace,
    sandbox_env,
    sink_result,
    stop_reason,
)
from tools_app.sandbox.docker_containers import ContainerPool, spawned_name
from tools_app.sandbox.docker_runner import (
    RunnerConnection,
    RunnerLost,
    RunnerUnavailable,
    docker_frames,
)
from tools_app.sandbox.secret_env import (
    DOCKER_ENV_FILE,
    DOCKER_FEEDER,
    env_script,
    launcher_argv,
)

logger = logging.getLogger(__name__)

POLL = 0.05  # cancel/timeout check interval while the command is quiet
# Larger stdin goes through an exec of its own rather than the runner's control channel, so a
# big upload cannot hold up other commands' requests and kills.
RUNNER_MAX_STDIN = 4 << 20
# The runner kills a command by itself this long after its timeout, should its host be gone.
RUNNER_DEADLINE_MARGIN = 10.0
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
        runner: bool = True,
        runner_idle: float = 600.0,
    ) -> None:
        self.image = image
        self.uid = uid
        self.use_runner = runner
        self.runner_idle = runner_idle
        self._runners: dict[str, RunnerConnection] = {}
        self._no_runner: set[str] = set()  # containers whose image cannot run it
        self._runner_locks: dict[str, threading.Lock] = {}
        self._runners_lock = threading.Lock()
        # A forked worker child must not use (or close) the parent's runner connections.
        ref = weakref.ref(self)

        def forget_after_fork() -> None:
            box = ref()
            if box is not None:
                box._forget_runners()

        os.register_at_fork(after_in_child=forget_after_fork)
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
        if self.use_runner and len(req.stdin or b"") <= RUNNER_MAX_STDIN:
            cid, conn = self._runner_for(workspace_id, ws, req.network, req.mounts)
            if conn is not None:
                try:
                    return self._exec_on_runner(
                        conn, cid, workspace_id, req, on_output, cancel, started, started_wall
                    )
                except _NotStarted:
                    pass  # the runner went away before taking the command: one exec instead
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
        exit_code = None if container_killed else self._exit_code(exec_id)
        return self._finish(sink, started, started_wall, cid, workspace_id, req, exit_code, reason)

    # -- the in-container runner (see docker_runner / runner_agent) -------------------------

    def _runner_for(
        self, workspace_id: str, ws: Path, network: bool, mounts: tuple[Mount, ...] = ()
    ) -> tuple[str, RunnerConnection | None]:
        """The warm container and this process's runner in it; ``None`` when it cannot run."""
        import docker.errors

        for attempt in range(2):
            cid = self.pool.ensure(workspace_id, ws, network=network, mounts=mounts)
            if cid in self._no_runner:
                return cid, None
            conn = self._runners.get(cid)
            if conn is not None and conn.usable(self.runner_idle):
                return cid, conn
            with self._runners_lock:
                lock = self._runner_locks.setdefault(cid, threading.Lock())
            with lock:
                conn = self._runners.get(cid)
                if conn is not None:
                    if conn.usable(self.runner_idle):
                        return cid, conn
                    conn.close()
                env = [f"{k}={v}" for k, v in sandbox_env(ExecRequest(["true"])).items()]
                try:
                    with self.pool.errors():
                        try:
                            conn = RunnerConnection(self.api, cid, self.uid, env, self.runner_idle)
                        except docker.errors.APIError as exc:
                            # The container went away (404) or is not running (409): again,
                            # with the container ensure() finds or makes now.
                            if attempt == 0 and exc.status_code in (404, 409):
                                self.pool.forget(workspace_id, network, mounts)
                                continue
                            raise
                except RunnerUnavailable as exc:
                    if exc.permanent:
                        logger.warning(
                            "image %s cannot run the sandbox runner (%s); one exec per command",
                            self.image,
                            exc,
                        )
                        self._no_runner.add(cid)
                    return cid, None
                with self._runners_lock:
                    for other, dead in list(self._runners.items()):
                        if not dead.alive:  # its container went away, or it left when idle
                            del self._runners[other]
                    self._runners[cid] = conn
                return cid, conn
        raise AssertionError("unreachable")

    def _exec_on_runner(
        self,
        conn: RunnerConnection,
        cid: str,
        workspace_id: str,
        req: ExecRequest,
        on_output: OutputCallback | None,
        cancel: threading.Event | None,
        started: float,
        started_wall: float,
    ) -> ExecResult:
        try:
            jid, events = conn.submit(
                req.argv,
                req.cwd,
                sandbox_env(req),
                req.stdin,
                req.max_output,
                deadline=req.timeout + RUNNER_DEADLINE_MARGIN,
            )
        except RunnerLost as exc:
            raise _NotStarted from exc
        sink = OutputSink(req.max_output, on_output)
        deadline = started + req.timeout
        reason: str | None = None
        killed_at = 0.0
        container_killed = False
        exit_code: int | None = None
        lost = ""
        taken = False  # the runner read the command: it may have run, so never run it again
        try:
            while True:
                now = time.monotonic()
                if reason is None:
                    reason = stop_reason(cancel, deadline, now)
                    if reason is not None:
                        conn.kill(jid)
                        killed_at = now
                elif not container_killed:
                    # The runner kills the group at once; if it cannot answer, kill everything.
                    if now - killed_at >= GROUP_KILL_GRACE:
                        self.pool.kill(cid)
                        container_killed = True
                        killed_at = now
                elif now - killed_at >= STREAM_GRACE:
                    break
                wait = POLL if reason else max(0.0, min(POLL, deadline - now))
                try:
                    event = events.get(timeout=wait)
                except queue.Empty:
                    continue
                if "a" in event or "s" in event:
                    taken = True
                elif "o" in event:
                    sink.feed("stdout", base64.b64decode(event["o"]))
                elif "e" in event:
                    sink.feed("stderr", base64.b64decode(event["e"]))
                elif "x" in event:
                    exit_code = int(event["x"])
                    break
                elif "lost" in event:
                    lost = str(event["lost"])
                    break
        finally:
            if exit_code is None and not lost:
                conn.kill(jid)  # we stop waiting (killed, or an error): so does the command
            conn.done(jid)
        if lost and not taken and reason is None:
            raise _NotStarted  # the runner left before it read the command
        if lost and reason is None:
            # The runner died under the command: the container was removed or killed, or the
            # kernel's OOM killer chose the runner. Whatever it ran is unsupervised now.
            self.pool.kill(cid)
            if not self.pool.oom_since(cid, started_wall):
                raise SandboxError(
                    "the sandbox stopped while the command ran: its container was removed or "
                    f"killed, or its command runner was killed ({lost})"
                )
            exit_code = 137
        return self._finish(sink, started, started_wall, cid, workspace_id, req, exit_code, reason)

    def _finish(
        self,
        sink: OutputSink,
        started: float,
        started_wall: float,
        cid: str,
        workspace_id: str,
        req: ExecRequest,
        exit_code: int | None,
        reason: str | None,
    ) -> ExecResult:
        killed_reason = None
        if reason is None and exit_code == 137 and self.pool.oom_since(cid, started_wall):
            killed_reason = "memory limit (OOM)"
        self.pool.touch(workspace_id, req.network, req.mounts)
        return sink_result(
            started,
            sink,
            exit_code=exit_code,
            sandbox_id=cid[:12],
            reason=reason,
            killed_reason=killed_reason,
        )

    def _forget_runners(self) -> None:
        for conn in self._runners.values():
            conn.close()  # only forgets: the socket belongs to the parent
        self._runners = {}
        self._runner_locks = {}
        self._runners_lock = threading.Lock()

    def close_idle_runners(self, max_idle_seconds: float) -> None:
        """Stop this process's runners that ran nothing for ``max_idle_seconds`` (or whose
        container is gone), so their containers show no running exec to the reaper."""
        now = time.monotonic()
        closing = []
        with self._runners_lock:
            for cid, conn in list(self._runners.items()):
                if not conn.alive or (not conn.busy and now - conn.last_used >= max_idle_seconds):
                    del self._runners[cid]
                    conn.close()
                    closing.append(conn)
        deadline = time.monotonic() + 2.0
        for conn in closing:
            while time.monotonic() < deadline and conn.running():
                time.sleep(0.02)

    # -- one exec per command (images without python3, or the runner turned off) ----------

    def _create_exec(
        self, workspace_id: str, ws: Path, req: ExecRequest, cmd: list[str], env: list[str]
    ) -> tuple[str, str]:
        import docker.errors

        # The warm container may have died (OOM took its init, someone removed it): one retry
        # with a freshly created container.
        for attempt in range(2):
            cid = self.pool.ensure(workspace_id, ws, network=req.network, mounts=req.mounts)
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
                        self.pool.forget(workspace_id, req.network, req.mounts)
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
                    reason = stop_reason(cancel, deadline, now)
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

    # -- long-lived processes --------------------------------------------------------------

    def spawn(self, workspace_id: str, workspace_dir: Path, req: SpawnRequest) -> Spawned:
        """A container made like the warm ones (one hardening profile), with the process as
        its command and its stdin open; ``docker start --attach --interactive`` then pipes
        the host command's stdin and stdout to the process."""
        docker = shutil.which("docker")
        if docker is None:
            raise SandboxError(
                "long-lived processes in the docker sandbox (stdio MCP servers) need the docker "
                "command line on the worker host; install it or use the bubblewrap backend"
            )
        ws = prepare_workspace(workspace_dir, self.uid)
        name = spawned_name(req.name, workspace_id)
        argv = list(req.argv)
        if req.secret_env:
            # Not in the container's Env (docker inspect shows it): the launcher waits for
            # them on the container's own tmpfs, where deliver() writes them (secret_env).
            script = env_script(req.secret_env)
            argv = launcher_argv(DOCKER_ENV_FILE, argv)
        cid = self.pool.create_spawned(
            name,
            workspace=ws,
            argv=argv,
            environment=sandbox_env(req),
            network=req.network,
            ro_binds=list(req.ro_binds),
        )
        env = {"PATH": os.environ.get("PATH", DEFAULT_PATH), "LANG": "C.UTF-8"}
        for key in ("DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY"):
            if key in os.environ:
                env[key] = os.environ[key]
        return Spawned(
            argv=[docker, "start", "--attach", "--interactive", cid],
            env=env,
            sandbox_id=f"docker:{name}",
            cleanup=lambda: self.pool.remove_spawned(cid),
            deliver=(lambda: self._deliver_env(cid, script)) if req.secret_env else None,
        )

    def _deliver_env(self, cid: str, script: bytes, timeout: float = 60.0) -> None:
        """Once the container runs, one exec as the sandbox uid writes ``script`` from its
        stdin into the container's /tmp, where the launcher is waiting for it."""
        deadline = time.monotonic() + timeout
        while True:
            with self.pool.errors():  # a 404: it ended (and was removed) at once
                state = self.api.inspect_container(cid)["State"]
            if state.get("Running"):
                break
            if state.get("Status") in ("exited", "dead") or time.monotonic() > deadline:
                raise SandboxError("the server's container did not start")
            time.sleep(0.02)
        with self.pool.errors():
            exec_id = self.api.exec_create(
                cid, ["sh", "-c", DOCKER_FEEDER], stdin=True, user=f"{self.uid}:{self.uid}"
            )["Id"]
            sock = self.api.exec_start(exec_id, socket=True)
        raw = getattr(sock, "_sock", sock)
        try:
            raw.settimeout(max(1.0, deadline - time.monotonic()))
            raw.sendall(script)
            raw.shutdown(1)  # EOF: cat ends, the file is renamed into place
            while raw.recv(4096):
                pass
        except OSError as exc:
            raise SandboxError(f"could not hand the server its environment: {exc}") from None
        finally:
            _close(sock)
        while time.monotonic() < deadline:
            with self.pool.errors():
                info = self.api.exec_inspect(exec_id)
            if not info.get("Running") and info.get("ExitCode") is not None:
                if info["ExitCode"] != 0:
                    raise SandboxError(
                        f"could not hand the server its environment (exit {info['ExitCode']})"
                    )
                return
            time.sleep(0.01)
        raise SandboxError("could not hand the server its environment in time")

    def release(self, workspace_id: str) -> None:
        self.pool.release(workspace_id)

    def reap_idle(self, max_idle_seconds: float) -> int:
        self.close_idle_runners(max_idle_seconds)
        return self.pool.reap_idle(max_idle_seconds)

    def shutdown(self) -> int:
        # Our runners first: a runner's exec would make its container look busy.
        with self._runners_lock:
            conns, self._runners = list(self._runners.values()), {}
        for conn in conns:
            conn.close()
        deadline = time.monotonic() + 2.0
        for conn in conns:
            while time.monotonic() < deadline and conn.running():
                time.sleep(0.02)
        return self.pool.remove_warm()

    def reap_orphans(self) -> int:
        return self.pool.reap_orphans()

    def health(self) -> tuple[bool, str]:
        return self.pool.health()


class _NotStarted(Exception):
    pass


def _parse_frames(buf: bytearray, sink: OutputSink) -> None:
    for stream_id, payload in docker_frames(buf):
        sink.feed("stderr" if stream_id == 2 else "stdout", payload)


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
