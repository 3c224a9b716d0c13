"""bubblewrap backend for hosts without Docker: namespaces, a real unprivileged uid, rlimits.

Layout inside: the host's /usr read-only (plus the merged-usr symlinks), a handful of generated
/etc files (no host passwd/shadow), private /proc, /dev and /tmp, and the workspace at
/workspace. All namespaces are unshared (network only shared when asked). There is no memory
cgroup for us here, so memory is capped with RLIMIT_AS and processes with RLIMIT_NPROC (which
counts every process of the sandbox uid on the host, docker sandboxes included).
"""

from __future__ import annotations

import fcntl
import math
import os
import shutil
import tempfile
import termios
import threading
import time
from pathlib import Path

from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from tools_app.sandbox._process import run_process
from tools_app.sandbox.base import (
    WORKSPACE,
    ExecRequest,
    ExecResult,
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
)
from tools_app.sandbox.secret_env import (
    BWRAP_ENV_DIR,
    BWRAP_ENV_FILE,
    launcher_argv,
    private_env_dir,
)

FSIZE = 1 << 30  # largest single file a command may write
NOFILE = 256
HOST_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
# Host /etc files a normal program needs to start (dynamic loader, alternatives, timezone).
ETC_RO = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime")
# Only with network: name resolution and TLS roots.
ETC_NET = ("resolv.conf", "hosts", "ssl", "ca-certificates", "gai.conf")
# The CPU-seconds backstop (RLIMIT_CPU) of a long-lived process, which has no timeout.
SPAWN_CPU_SECONDS = 7 * 24 * 3600.0


class BubblewrapSandbox(Sandbox):
    name = "bubblewrap"

    def __init__(
        self,
        *,
        uid: int = 10001,
        memory: str | int = "512m",
        pids: int = 128,
        bwrap: str = "bwrap",
    ) -> None:
        self.memory = parse_size(memory)
        self.pids = pids
        self.bwrap = bwrap
        # setpriv needs root; unprivileged we stay our own uid (bwrap's user namespace still
        # hides the rest of the host).
        self.as_root = os.geteuid() == 0
        self.uid = uid if self.as_root else os.geteuid()

    # -- the command line -------------------------------------------------------------------

    def command(
        self,
        req: ExecRequest,
        *,
        workspace: Path,
        data_fds: dict[str, int],
        data_files: dict[str, Path] | None = None,
        ro_binds: list[Path] | None = None,
        secret_dir: Path | None = None,
    ) -> list[str]:
        """``data_files``: /etc files bound from host files instead of pipes (long-lived
        processes started by another library, which cannot pass descriptors); ``ro_binds``:
        host directories mounted read-only at their own path (the MCP servers' venv);
        ``secret_dir``: the private directory of a secret environment (``secret_env``)."""
        cmd: list[str] = []
        if self.as_root:
            cmd += ["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups"]
            cmd += ["--no-new-privs", "--"]
        cmd += [
            "prlimit",
            f"--as={self.memory}",
            # CPU seconds: a backstop in case our wall-clock kill ever fails.
            f"--cpu={math.ceil(req.timeout) + 1}",
            f"--nproc={self.pids}",
            f"--fsize={FSIZE}",
            f"--nofile={NOFILE}",
            "--core=0",
            "--",
            self.bwrap,
            "--unshare-all",
            *(["--share-net"] if req.network else []),
            "--die-with-parent",
            "--new-session",
            "--hostname",
            "sandbox",
            "--ro-bind",
            "/usr",
            "/usr",
        ]
        for top in ("bin", "sbin", "lib", "lib64", "lib32", "libx32"):
            host = Path("/") / top
            if host.is_symlink():
                cmd += ["--symlink", os.readlink(host), f"/{top}"]
            elif host.is_dir():
                cmd += ["--ro-bind", str(host), f"/{top}"]
        cmd += ["--dir", "/etc"]
        for name in ETC_RO + (ETC_NET if req.network else ()):
            cmd += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        cmd += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]  # noqa: S108 - sandbox path
        cmd += ["--bind", str(workspace), WORKSPACE]
        for mount in req.mounts:  # host folders an admin granted, at /mnt/<name>
            cmd += ["--bind" if mount.writable else "--ro-bind", str(mount.source), mount.target]
        for extra in ro_binds or []:
            cmd += ["--ro-bind", str(extra), str(extra)]
        for name, path in (data_files or {}).items():
            cmd += ["--ro-bind", str(path), f"/etc/{name}"]
        if secret_dir is not None:  # writable: the launcher removes the file it read
            cmd += ["--bind", str(secret_dir), BWRAP_ENV_DIR]
        # Data files go last: bwrap reads each pipe only when it reaches that step, so the last
        # pipe being drained proves every mount before it succeeded (see exec()).
        for name, fd in data_fds.items():
            cmd += ["--perms", "0644", "--ro-bind-data", str(fd), f"/etc/{name}"]
        # Only /tmp and /workspace stay writable; the root tmpfs (/, /etc) becomes read-only.
        cmd += ["--remount-ro", "/", "--chdir", req.cwd, "--clearenv"]
        for key, value in sandbox_env(req).items():
            cmd += ["--setenv", key, value]
        return [*cmd, "--", *req.argv]

    def _etc_files(self, network: bool) -> dict[str, bytes]:
        files = {
            "passwd": (
                "root:x:0:0:root:/root:/usr/sbin/nologin\n"
                f"sandbox:x:{self.uid}:{self.uid}:sandbox:{WORKSPACE}:/bin/sh\n"
                "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
            ),
            "group": f"root:x:0:\nsandbox:x:{self.uid}:\nnogroup:x:65534:\n",
            "hostname": "sandbox\n",
            "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files dns\n",
        }
        if not network:
            files["hosts"] = "127.0.0.1 localhost sandbox\n::1 localhost\n"
        return {name: text.encode() for name, text in files.items()}

    # -- running ----------------------------------------------------------------------------

    def exec(
        self,
        workspace_id: str,
        workspace_dir: Path,
        req: ExecRequest,
        *,
        on_output: OutputCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> ExecResult:
        # The kernel can refuse new namespaces for a moment (EAGAIN: "Resource temporarily
        # unavailable") while many are being torn down. Nothing ran yet, so try again briefly.
        for attempt in Retrying(
            retry=retry_if_exception(_namespaces_busy),
            stop=stop_after_attempt(3),
            wait=wait_exponential(multiplier=0.2, max=1.0),
            reraise=True,
        ):
            with attempt:
                return self._exec_once(
                    workspace_id, workspace_dir, req, on_output=on_output, cancel=cancel
                )
        raise AssertionError("unreachable")  # pragma: no cover - reraise=True

    def _exec_once(
        self,
        workspace_id: str,
        workspace_dir: Path,
        req: ExecRequest,
        *,
        on_output: OutputCallback | None,
        cancel: threading.Event | None,
    ) -> ExecResult:
        if req.network:
            # --share-net is the host's own network namespace, loopback included, where Redis,
            # PostgreSQL and the app listen. Refuse rather than hand that out.
            raise SandboxError(
                "the bubblewrap sandbox cannot give commands network access without exposing "
                "the host's loopback services (Redis, PostgreSQL, the app); use the docker "
                "backend for tools that need the network, or switch their network setting off"
            )
        started = time.monotonic()
        ws = prepare_workspace(workspace_dir, self.uid)
        data_fds: dict[str, int] = {}
        sink = OutputSink(req.max_output, on_output)
        try:
            for name, content in self._etc_files(req.network).items():
                r, w = os.pipe()
                os.write(w, content)  # tiny: always fits in the pipe buffer
                os.close(w)
                data_fds[name] = r
            cmd = self.command(req, workspace=ws, data_fds=data_fds)
            try:
                outcome = run_process(
                    cmd,
                    env={"PATH": HOST_PATH, "LANG": "C.UTF-8"},
                    cwd="/",
                    stdin=req.stdin,
                    timeout=req.timeout,
                    sink=sink,
                    cancel=cancel,
                    pass_fds=tuple(data_fds.values()),
                )
            except FileNotFoundError as exc:
                raise SandboxError(f"bubblewrap backend unavailable: {exc}") from exc
            set_up = not _has_unread_data(list(data_fds.values())[-1])
        finally:
            for fd in data_fds.values():
                os.close(fd)
        if not set_up and outcome.reason is None:
            # The sandbox itself failed (namespaces refused, workspace unreachable...): that must
            # not look like the command failing.
            detail = sink.text("stderr").strip() or f"exit status {outcome.returncode}"
            if "Permission denied" in detail:
                detail += (
                    f" - uid {self.uid} must be able to reach {ws}: make its parent directories"
                    " searchable (chmod o+x) or set SANDBOX_UID"
                )
            raise SandboxError(f"bubblewrap could not set up the sandbox: {detail}")
        exit_code = outcome.returncode
        if exit_code == 1 and sink.text("stderr").startswith("bwrap: execvp "):
            exit_code = 127  # "command not found", as a shell (and the docker backend) reports it
        return sink_result(
            started,
            sink,
            exit_code=exit_code,
            sandbox_id=f"bwrap:{outcome.pid}",
            reason=outcome.reason,
        )

    # -- long-lived processes --------------------------------------------------------------

    def spawn(self, workspace_id: str, workspace_dir: Path, req: SpawnRequest) -> Spawned:
        """The same command line as ``exec``'s; the /etc files come from a private directory
        instead of pipes (the caller's library starts the process and passes no descriptors)."""
        if req.network:
            raise SandboxError(
                "the bubblewrap sandbox cannot give a long-lived process network access without "
                "exposing the host's loopback services; use the docker backend or switch "
                "network off"
            )
        ws = prepare_workspace(workspace_dir, self.uid)
        etc_dir = Path(tempfile.mkdtemp(prefix="cc-spawn-etc-"))
        secret_dir: Path | None = None

        def cleanup() -> None:
            shutil.rmtree(etc_dir, ignore_errors=True)
            if secret_dir is not None:
                shutil.rmtree(secret_dir, ignore_errors=True)

        try:
            files = self._etc_files(False)
            for name, content in files.items():
                (etc_dir / name).write_bytes(content)
                (etc_dir / name).chmod(0o644)
            etc_dir.chmod(0o755)  # the sandbox uid reads them
            argv = list(req.argv)
            if req.secret_env:
                # Never --setenv: bwrap's command line is world-readable (secret_env).
                secret_dir = private_env_dir(req.secret_env, self.uid)
                argv = launcher_argv(BWRAP_ENV_FILE, argv)
            request = ExecRequest(argv=argv, env=req.env, timeout=SPAWN_CPU_SECONDS)
            cmd = self.command(
                request,
                workspace=ws,
                data_fds={},
                data_files={name: etc_dir / name for name in files},
                ro_binds=req.ro_binds,
                secret_dir=secret_dir,
            )
        except BaseException:
            cleanup()
            raise
        return Spawned(
            argv=cmd,
            env={"PATH": os.environ.get("PATH", HOST_PATH), "LANG": "C.UTF-8"},
            sandbox_id="bwrap",
            cleanup=cleanup,
        )

    def health(self) -> tuple[bool, str]:
        tools = [self.bwrap, "prlimit", *(["setpriv"] if self.as_root else [])]
        missing = [t for t in tools if shutil.which(t) is None]
        if missing:
            return False, f"missing on this host: {', '.join(missing)} (apt-get install bubblewrap)"
        # mkdtemp, not a predictable name: we chown the probe dir, possibly as root.
        probe = Path(tempfile.mkdtemp(prefix="cc-bwrap-probe-"))
        try:
            result = self.exec("health", probe, ExecRequest(["id", "-u"], timeout=10))
        except SandboxError as exc:
            return False, str(exc)
        finally:
            shutil.rmtree(probe, ignore_errors=True)
        if result.exit_code != 0:
            return False, f"bubblewrap probe failed: {result.stderr.strip()}"
        return True, (
            f"bubblewrap as uid {result.stdout.strip()}, memory {self.memory >> 20} MiB "
            f"(address space), {self.pids} processes"
        )


def _has_unread_data(fd: int) -> bool:
    return int.from_bytes(fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"), "little") > 0


def _namespaces_busy(exc: BaseException) -> bool:
    return isinstance(exc, SandboxError) and "Resource temporarily unavailable" in str(exc)
