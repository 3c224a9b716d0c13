"""The sandbox interface every backend implements, and the small pieces they share.

A sandbox runs one argv for one workspace: the workspace's host directory is the only writable,
persistent place the command sees (at ``/workspace``), it runs as an unprivileged uid with a clean
environment, and it is killed - with everything it started - on timeout or cancel.

``exec`` runs a command to its end. ``spawn`` sets up a long-lived process spoken to over its
stdin and stdout (a stdio MCP server) in the same sandbox, for a caller that runs the host
command it returns with pipes (the MCP SDK does) and closes it when done.
"""

from __future__ import annotations

import codecs
import logging
import os
import posixpath
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from infra.env import parse_size as parse_size  # the backends' import: sizes as Docker writes them

logger = logging.getLogger(__name__)

WORKSPACE = "/workspace"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

OutputCallback = Callable[[str, str], None]


def _check_argv_env(argv: list[str], env: dict[str, str]) -> None:
    if not argv or not all(isinstance(a, str) for a in argv):
        raise ValueError("argv must be a non-empty list of strings")
    if any("\0" in a for a in argv):
        raise ValueError("argv must not contain NUL bytes")
    for key, value in env.items():
        if not key or "=" in key or "\0" in key or "\0" in value:
            raise ValueError(f"invalid environment variable name or value: {key!r}")


HOST_FOLDERS = "/mnt"  # where host folders an admin granted appear in a sandbox


@dataclass(frozen=True)
class Mount:
    """A host directory an admin granted, bind-mounted at ``target`` (``/mnt/<name>``),
    read-only unless ``writable``."""

    source: Path
    target: str
    writable: bool = False

    def __post_init__(self) -> None:
        if not self.source.is_absolute():
            raise ValueError(f"a mount's source must be an absolute path, not {self.source}")
        target = posixpath.normpath(self.target)
        if not target.startswith(HOST_FOLDERS + "/") or target.count("/") != 2:
            raise ValueError(f"a host folder is mounted at {HOST_FOLDERS}/<name>, not {target}")


def mounts_key(mounts: tuple[Mount, ...]) -> str:
    """A short name for a set of mounts: a warm container is made with one set, and one
    with another set (or none) is another container."""
    if not mounts:
        return ""
    import hashlib

    text = "\n".join(f"{m.source}|{m.target}|{int(m.writable)}" for m in sorted(mounts, key=str))
    return hashlib.sha256(text.encode()).hexdigest()[:8]


@dataclass
class ExecRequest:
    argv: list[str]
    cwd: str = WORKSPACE  # path INSIDE the sandbox; /workspace or below
    env: dict[str, str] = field(default_factory=dict)  # added to the minimal clean env
    stdin: bytes | None = None
    timeout: float = 60.0  # seconds; on expiry the whole process tree is killed
    max_output: int = 1_000_000  # bytes kept per stream; the rest is drained and dropped
    network: bool = False
    mounts: tuple[Mount, ...] = ()  # host folders (docker and bubblewrap; "none" has no mounts)

    def __post_init__(self) -> None:
        # Validate before anything runs: a bad request is the caller's bug, not a broken sandbox.
        _check_argv_env(self.argv, self.env)
        self.cwd = normalize_cwd(self.cwd)
        if self.timeout <= 0:
            raise ValueError("timeout must be positive")
        if self.max_output < 0:
            raise ValueError("max_output must not be negative")


@dataclass
class SpawnRequest:
    """A long-lived process in the sandbox, started in /workspace."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)  # added to the minimal clean env
    network: bool = False
    ro_binds: list[Path] = field(default_factory=list)  # host dirs, read-only at their own path
    name: str = "proc"  # names its container (docker), for operators
    # Variables only the process may see (API keys): never on a command line or in a
    # container's configuration (see secret_env); an isolating backend or nothing.
    secret_env: dict[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        _check_argv_env(self.argv, self.env)
        _check_argv_env(self.argv, self.secret_env)


@dataclass
class Spawned:
    """A process set up in the sandbox: run ``argv`` on the host, with ``env`` and ``cwd``
    and pipes, and its stdin, stdout and stderr are those of the process inside. ``close()``
    once that host command has ended removes whatever is left (a container, /etc files)."""

    argv: list[str]
    env: dict[str, str]
    sandbox_id: str
    cwd: str | None = None
    cleanup: Callable[[], None] | None = None
    # Called once the host command runs, before the process is spoken to: hands it what it
    # waits for (its secret environment, docker); blocks until done, raises SandboxError.
    deliver: Callable[[], None] | None = None

    def delivered(self) -> None:
        deliver, self.deliver = self.deliver, None
        if deliver is not None:
            deliver()

    def close(self) -> None:
        cleanup, self.cleanup = self.cleanup, None
        if cleanup is not None:
            cleanup()


@dataclass
class ExecResult:
    exit_code: int | None  # None when killed by timeout/cancel
    stdout: str
    stderr: str
    truncated: bool
    timed_out: bool
    cancelled: bool
    duration_ms: int
    sandbox_id: str
    killed_reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


class SandboxError(Exception):
    """The sandbox itself is broken or unavailable (not: the command failed)."""


class Sandbox(ABC):
    name: str = ""

    @abstractmethod
    def exec(
        self,
        workspace_id: str,
        workspace_dir: Path,
        req: ExecRequest,
        *,
        on_output: OutputCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> ExecResult:
        """Run ``req.argv``; stream chunks to ``on_output(stream, text)`` as they arrive."""

    @abstractmethod
    def spawn(self, workspace_id: str, workspace_dir: Path, req: SpawnRequest) -> Spawned:
        """Set up ``req.argv`` as a long-lived process in this workspace's sandbox (see
        ``Spawned``); it starts when the caller runs the host command."""

    def release(self, workspace_id: str) -> None:  # noqa: B027 - optional hook, no-op by default
        """Drop warm resources held for this workspace."""

    def reap_idle(self, max_idle_seconds: float) -> int:
        """Remove warm resources idle for longer than ``max_idle_seconds``; return the count."""
        return 0

    def shutdown(self) -> int:
        """The process is stopping: remove the warm resources it holds; return the count."""
        return 0

    def reap_orphans(self) -> int:
        """The process is starting: remove warm resources that processes of this deployment
        which are gone (killed) left behind; return the count."""
        return 0

    @abstractmethod
    def health(self) -> tuple[bool, str]:
        """``(ok, human detail)`` for the Tools Manager."""


def normalize_cwd(cwd: str) -> str:
    """Return ``cwd`` normalised, refusing anything that is not /workspace or below."""
    if not cwd.startswith("/"):
        cwd = posixpath.join(WORKSPACE, cwd)
    norm = posixpath.normpath(cwd)
    if norm != WORKSPACE and not norm.startswith(WORKSPACE + "/"):
        raise ValueError(f"cwd must be {WORKSPACE} or below, got {cwd!r}")
    return norm


def sandbox_env(req: ExecRequest | SpawnRequest) -> dict[str, str]:
    """The minimal environment a command sees; nothing leaks in from the host process."""
    env = {"PATH": DEFAULT_PATH, "HOME": WORKSPACE, "LANG": "C.UTF-8"}
    env.update(req.env)
    return env


def prepare_workspace(workspace_dir: Path, uid: int) -> Path:
    """Create the workspace dir and make it writable by the sandbox uid.

    Only the directory itself is chowned: walking a tree the sandbox user controls as root would
    let it swap a directory for a symlink mid-walk and have us chown host files. When we do not run
    as root we cannot chown; then SANDBOX_UID should equal our own uid (see README).
    """
    workspace_dir = Path(workspace_dir).resolve()
    workspace_dir.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        st = workspace_dir.stat()
        if st.st_uid != uid or st.st_gid != uid:
            os.chown(workspace_dir, uid, uid)
    return workspace_dir


class OutputSink:
    """Collects both streams with a per-stream byte cap and forwards decoded text as it arrives.

    Output past the cap is dropped (the caller keeps draining so the command never blocks on a
    full pipe) and ``truncated`` is set; the callback stops too, so a 100 MB flood does not reach
    the browser.
    """

    def __init__(self, max_output: int, on_output: OutputCallback | None) -> None:
        self.max_output = max_output
        self.truncated = False
        self._on_output = on_output
        self._buf = {"stdout": bytearray(), "stderr": bytearray()}
        # Incremental decoders so a UTF-8 character split across two chunks is not mangled.
        self._decoders = {
            name: codecs.getincrementaldecoder("utf-8")(errors="replace") for name in self._buf
        }

    def feed(self, stream: str, data: bytes) -> None:
        if not data:
            return
        buf = self._buf[stream]
        room = self.max_output - len(buf)
        if room <= 0:
            self.truncated = True
            return
        if len(data) > room:
            data = data[:room]
            self.truncated = True
        buf += data
        self._emit(stream, self._decoders[stream].decode(data))

    def finish(self) -> None:
        for stream, decoder in self._decoders.items():
            self._emit(stream, decoder.decode(b"", final=True))

    def text(self, stream: str) -> str:
        return bytes(self._buf[stream]).decode("utf-8", errors="replace")

    def _emit(self, stream: str, text: str) -> None:
        if not text or self._on_output is None:
            return
        try:
            self._on_output(stream, text)
        except Exception:
            # A broken consumer (e.g. a closed websocket) must not abandon a running command.
            logger.exception("sandbox on_output callback failed; not streaming any more")
            self._on_output = None


def sink_result(
    started: float,
    sink: OutputSink,
    *,
    exit_code: int | None,
    sandbox_id: str,
    reason: str | None = None,
    killed_reason: str | None = None,
) -> ExecResult:
    """The ``ExecResult`` of a command whose output ``sink`` collected. ``reason``: why we
    killed it ("timeout"/"cancelled"; the exit code is then meaningless); ``killed_reason``:
    what to report, when more than that is known (e.g. out of memory)."""
    sink.finish()  # flushes the decoders; a no-op when already done
    return ExecResult(
        exit_code=None if reason else exit_code,
        stdout=sink.text("stdout"),
        stderr=sink.text("stderr"),
        truncated=sink.truncated,
        timed_out=reason == "timeout",
        cancelled=reason == "cancelled",
        duration_ms=int((time.monotonic() - started) * 1000),
        sandbox_id=sandbox_id,
        killed_reason=killed_reason or reason,
    )


def stop_reason(cancel: threading.Event | None, deadline: float, now: float) -> str | None:
    """Why a running command must be killed now: "cancelled", "timeout", or ``None``."""
    if cancel is not None and cancel.is_set():
        return "cancelled"
    if now >= deadline:
        return "timeout"
    return None
