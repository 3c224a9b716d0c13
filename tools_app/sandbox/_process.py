"""Run a host process for the bubblewrap and none backends: stream, cap, time out, cancel.

The process starts in its own session, so ``killpg`` reaches everything it spawned that did not
deliberately start a session of its own (bubblewrap's ``--die-with-parent`` and pid namespace
cover that case for the bubblewrap backend). One thread multiplexes stdout, stderr and a pidfd
with ``selectors``; stdin is fed from a helper thread so a command that writes before it reads
cannot deadlock us.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from tools_app.sandbox.base import OutputSink, stop_reason

CHUNK = 65536
POLL = 0.05  # how often cancel/timeout are checked while nothing happens (cancel within ~0.1 s)
GRACE = 0.5  # after exit or kill, how long to wait for pipes still held by escaped processes


@dataclass
class ProcessOutcome:
    returncode: int | None  # shell convention: 128+N when killed by signal N
    reason: str | None  # "timeout" | "cancelled" when we killed it
    pid: int


def run_process(
    cmd: Sequence[str],
    *,
    env: dict[str, str],
    cwd: str,
    stdin: bytes | None,
    timeout: float,
    sink: OutputSink,
    cancel: threading.Event | None,
    pass_fds: Sequence[int] = (),
) -> ProcessOutcome:
    proc = subprocess.Popen(
        list(cmd),
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,
        pass_fds=tuple(pass_fds),
    )
    assert proc.stdout is not None and proc.stderr is not None
    feeder = _feed_stdin(proc, stdin) if stdin is not None else None
    deadline = time.monotonic() + timeout
    reason: str | None = None
    exited = False
    give_up_at: float | None = None

    sel = selectors.DefaultSelector()
    pidfd = _pidfd_open(proc.pid)
    for name, pipe in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        os.set_blocking(pipe.fileno(), False)
        sel.register(pipe.fileno(), selectors.EVENT_READ, name)
    if pidfd is not None:
        sel.register(pidfd, selectors.EVENT_READ, "exit")
    try:
        while True:
            now = time.monotonic()
            if reason is None:
                reason = stop_reason(cancel, deadline, now)
                if reason is not None:
                    _killpg(proc.pid)
                    give_up_at = now + GRACE
            if not exited and pidfd is None:
                exited = _has_exited(proc.pid)
            if exited and give_up_at is None:
                # Background children of a finished command must not outlive the call.
                _killpg(proc.pid)
                give_up_at = now + GRACE
            pipes_open = any(k.data != "exit" for k in sel.get_map().values())
            if (exited and not pipes_open) or (give_up_at is not None and now >= give_up_at):
                break
            wait = POLL if reason is not None else max(0.0, min(POLL, deadline - now))
            if pidfd is None and not pipes_open:
                wait = min(wait, 0.005)  # polling for the exit: keep short commands fast
            for key, _ in sel.select(wait):
                if key.data == "exit":
                    sel.unregister(key.fd)
                    exited = True
                    continue
                chunk = os.read(key.fd, CHUNK)
                if chunk:
                    sink.feed(key.data, chunk)
                else:
                    sel.unregister(key.fd)
    finally:
        sel.close()
        if pidfd is not None:
            os.close(pidfd)
        proc.stdout.close()
        proc.stderr.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if feeder is not None:
            feeder.join(timeout=1)
    sink.finish()
    code = proc.returncode
    return ProcessOutcome(
        returncode=None if reason else (128 - code if code < 0 else code),
        reason=reason,
        pid=proc.pid,
    )


def _feed_stdin(proc: subprocess.Popen[bytes], data: bytes) -> threading.Thread:
    def feed() -> None:
        assert proc.stdin is not None
        # The command may exit (or be killed) without reading everything: that is not an error.
        with contextlib.suppress(BrokenPipeError, OSError, ValueError):
            proc.stdin.write(data)
        with contextlib.suppress(BrokenPipeError, OSError, ValueError):
            proc.stdin.close()

    thread = threading.Thread(target=feed, name=f"sandbox-stdin-{proc.pid}", daemon=True)
    thread.start()
    return thread


def _pidfd_open(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # kernels before 5.3: fall back to polling
        return None


def _has_exited(pid: int) -> bool:
    # WNOWAIT: leave the zombie in place so its pid (= our process group id) cannot be reused
    # before we have killed the group.
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _killpg(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
