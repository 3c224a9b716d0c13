"""The command runner that lives inside a warm Docker sandbox container (stdlib only).

The host starts it once per container and worker process, as one long ``docker exec`` of
``python3 -I -u -c <this file>``, and then sends it commands instead of creating an exec for
every command (an exec costs the engine ~50 ms; a spawn here costs ~1 ms). It runs as the
sandbox uid, so everything it starts has the container's limits and no more rights than an
exec would have.

Protocol, one JSON object per line (stdin: requests; stdout: events; bytes as base64):

    -> {"op": "run", "i": ID, "argv": [...], "cwd": "/workspace/...", "env": {...},
        "stdin": B64 | null, "cap": BYTES, "deadline": SECONDS}
    -> {"op": "kill", "i": ID}
    <- {"ready": PID}                   once, at start
    <- {"i": ID, "a": 1}                the request was read: from here on it may run, so a
                                        host that loses the runner must not run it again
    <- {"i": ID, "s": PID}              the command started (not sent when it could not)
    <- {"i": ID, "o": B64} / {"i": ID, "e": B64}   stdout / stderr chunks, in order
    <- {"i": ID, "x": EXIT_CODE}        last message of a command (128+N for signal N)

Every command runs in its own session; when its leader exits (or on kill) the whole process
group is killed, like the shell wrapper of the exec path. Only ``cap`` + 1 bytes per stream are
forwarded (the rest is drained and dropped). A command still running ``deadline`` seconds after
it started is killed here too, in case the host that asked for it went away. The runner makes
itself non-dumpable, so the commands it starts (same uid) cannot open its /proc fds or ptrace it
to read or forge other commands' traffic; they can still kill it. The runner exits when its
stdin closes (killing what still runs) or after ``argv[1]`` seconds with no command, so an idle
container has no running exec and can be reaped.
"""

import base64
import contextlib
import errno
import json
import os
import selectors
import signal
import subprocess
import sys
import time

IDLE_EXIT = float(sys.argv[1]) if len(sys.argv) > 1 else 120.0
DRAIN_GRACE = 0.2  # after the group is killed: how long an escaped process may hold the pipes
CHUNK = 65536


def send(msg):
    data = memoryview((json.dumps(msg, separators=(",", ":")) + "\n").encode())
    while data:
        with contextlib.suppress(InterruptedError):
            data = data[os.write(1, data) :]


def b64(data):
    return base64.b64encode(data).decode("ascii")


class Job:
    def __init__(self, jid, proc, cap, stdin):
        self.jid = jid
        self.proc = proc
        self.cap = cap
        self.stdin = memoryview(stdin) if stdin else None
        self.pipes = [p for p in (proc.stdin, proc.stdout, proc.stderr) if p is not None]
        self.open = 2  # stdout and stderr not yet at EOF
        self.sent = {"o": 0, "e": 0}
        self.exited_at = None
        self.deadline = None


class Runner:
    def __init__(self):
        self.sel = selectors.DefaultSelector()
        self.jobs = {}
        self.inbuf = bytearray()
        self.last_active = time.monotonic()
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes select() when a child exits
        self.wake = wake_r
        self.sel.register(wake_r, selectors.EVENT_READ, ("wake", None, None))
        os.set_blocking(0, False)
        self.sel.register(0, selectors.EVENT_READ, ("ctl", None, None))

    # -- requests ---------------------------------------------------------------------------

    def on_control(self):
        try:
            data = os.read(0, CHUNK)
        except (BlockingIOError, InterruptedError):
            return True
        if not data:
            return False
        start = len(self.inbuf)
        self.inbuf += data
        # Only the new bytes can hold the next newline: a large request stays linear.
        end = self.inbuf.find(b"\n", start)
        while end >= 0:
            line = bytes(self.inbuf[:end])
            del self.inbuf[: end + 1]
            if line.strip():
                self.handle(line)
            end = self.inbuf.find(b"\n")
        return True

    def handle(self, line):
        try:
            msg = json.loads(line)
        except ValueError:
            return  # not ours to answer: no id to answer to
        try:
            if msg["op"] == "run":
                self.start(msg)
            elif msg["op"] == "kill":
                job = self.jobs.get(msg["i"])
                if job is not None:
                    killpg(job.proc.pid)
        except Exception as exc:  # one bad request must not take the other commands down
            if msg.get("op") == "run" and msg.get("i") not in self.jobs:
                self.fail(msg.get("i"), f"the sandbox runner refused the command: {exc!r}\n", 126)

    def start(self, msg):
        jid = msg["i"]
        # Before the spawn: a command can kill this runner before "s" would be sent.
        send({"i": jid, "a": 1})
        self.last_active = time.monotonic()
        cwd = msg["cwd"]
        if not os.path.isdir(cwd):
            self.fail(jid, f"sh: cd: can't cd to {cwd}: No such directory\n", 1)
            return
        env = dict(os.environ)
        env.update(msg["env"])
        stdin = base64.b64decode(msg["stdin"]) if msg.get("stdin") is not None else None
        argv = msg["argv"]
        try:
            proc = spawn(argv, cwd, env, stdin is not None)
        except OSError as exc:
            if exc.errno != errno.ENOEXEC:
                raise_start_error(self, jid, argv[0], exc)
                return
            # A script without a #! line: run it with sh, as a shell's execvp would.
            try:
                proc = spawn(["/bin/sh", *argv], cwd, env, stdin is not None)
            except OSError as exc2:
                raise_start_error(self, jid, argv[0], exc2)
                return
        job = Job(jid, proc, int(msg.get("cap", 1_000_000)), stdin)
        job.deadline = time.monotonic() + float(msg.get("deadline") or 86400)
        self.jobs[jid] = job
        send({"i": jid, "s": proc.pid})
        for pipe, key in ((proc.stdout, "o"), (proc.stderr, "e")):
            assert pipe is not None
            os.set_blocking(pipe.fileno(), False)
            self.sel.register(pipe, selectors.EVENT_READ, ("out", job, key))
        if proc.stdin is not None:
            if job.stdin:
                os.set_blocking(proc.stdin.fileno(), False)
                self.sel.register(proc.stdin, selectors.EVENT_WRITE, ("in", job, None))
            else:
                proc.stdin.close()

    def fail(self, jid, text, code):
        send({"i": jid, "e": b64(text.encode())})
        send({"i": jid, "x": code})

    # -- command i/o ------------------------------------------------------------------------

    def on_output(self, pipe, job, key):
        try:
            data = os.read(pipe.fileno(), CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        if not data:
            self.sel.unregister(pipe)
            pipe.close()
            job.open -= 1
            return
        self.forward(job, key, data)

    def forward(self, job, key, data):
        room = job.cap + 1 - job.sent[key]  # one byte past the cap tells the host it was cut
        if room > 0:
            data = data[:room]
            job.sent[key] += len(data)
            send({"i": job.jid, key: b64(data)})

    def drain(self, pipe, job, key):
        """Forward what is already in the pipe (an escaped process may still hold it open)."""
        for _ in range(64):
            try:
                data = os.read(pipe.fileno(), CHUNK)
            except (BlockingIOError, InterruptedError, OSError, ValueError):
                return
            if not data:
                return
            self.forward(job, key, data)

    def on_stdin(self, pipe, job):
        try:
            written = os.write(pipe.fileno(), job.stdin[:CHUNK])
        except (BlockingIOError, InterruptedError):
            return
        except OSError:  # the command exited or closed its stdin without reading everything
            written = len(job.stdin)
        job.stdin = job.stdin[written:]
        if not job.stdin:
            self.sel.unregister(pipe)
            pipe.close()

    # -- lifecycle --------------------------------------------------------------------------

    def check_jobs(self):
        now = time.monotonic()
        for job in list(self.jobs.values()):
            if job.exited_at is None and now >= job.deadline:
                killpg(job.proc.pid)  # the host should have asked by now; it may be gone
            if job.exited_at is None:
                # WNOWAIT: the leader stays a zombie, so its pid (= the group id) cannot be
                # reused before the group is killed.
                flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
                try:
                    exited = os.waitid(os.P_PID, job.proc.pid, flags) is not None
                except ChildProcessError:
                    exited = True
                if not exited:
                    continue
                killpg(job.proc.pid)
                job.exited_at = now
            if job.open and now - job.exited_at < DRAIN_GRACE:
                continue
            self.finish(job)
            self.last_active = now

    def finish(self, job):
        for key in list(self.sel.get_map().values()):
            if key.data[0] == "out" and key.data[1] is job:
                self.drain(key.fileobj, job, key.data[2])
        for pipe in job.pipes:
            with contextlib.suppress(KeyError, ValueError):
                self.sel.unregister(pipe)
            pipe.close()
        code = job.proc.wait()
        send({"i": job.jid, "x": 128 - code if code < 0 else code})
        del self.jobs[job.jid]

    def next_timeout(self):
        now = time.monotonic()
        if not self.jobs:
            return max(0.0, self.last_active + IDLE_EXIT - now)
        waits = [j.exited_at + DRAIN_GRACE - now for j in self.jobs.values() if j.exited_at]
        waits += [j.deadline - now for j in self.jobs.values() if j.exited_at is None]
        # SIGCHLD wakes us when a leader exits; the 0.5 s poll only backs that up.
        return max(0.0, min([0.5, *waits]))

    def serve(self):
        send({"ready": os.getpid()})
        while True:
            for key, _ in self.sel.select(self.next_timeout()):
                kind, job, stream = key.data
                if kind == "ctl":
                    if not self.on_control():
                        return
                elif kind == "wake":
                    with contextlib.suppress(BlockingIOError, InterruptedError):
                        os.read(self.wake, CHUNK)
                elif kind == "out":
                    self.on_output(key.fileobj, job, stream)
                elif kind == "in":
                    self.on_stdin(key.fileobj, job)
            self.check_jobs()
            if not self.jobs and time.monotonic() - self.last_active >= IDLE_EXIT:
                return

    def shutdown(self):
        for job in self.jobs.values():
            killpg(job.proc.pid)


def spawn(argv, cwd, env, with_stdin):
    return subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE if with_stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        close_fds=True,
    )


def raise_start_error(runner, jid, program, exc):
    """Report a command that could not start the way a shell would."""
    if isinstance(exc, FileNotFoundError):
        runner.fail(jid, f"{program}: not found\n", 127)
    elif isinstance(exc, PermissionError):
        runner.fail(jid, f"{program}: permission denied\n", 126)
    else:  # e.g. EAGAIN: the pids limit is full
        runner.fail(jid, f"could not start {program}: {exc.strerror or exc}\n", 126)


def non_dumpable():
    # Without ctypes/libc in the image the container is still the boundary.
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0


def killpg(pgid):
    with contextlib.suppress(OSError):
        os.killpg(pgid, signal.SIGKILL)


def main():
    non_dumpable()
    runner = Runner()
    try:
        runner.serve()
    finally:
        runner.shutdown()


if __name__ == "__main__":
    main()
