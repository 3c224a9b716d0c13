"""No isolation at all: a plain subprocess in the workspace directory.

Only used when an admin names it (the Tools Manager shows it in red). It still gets a clean
environment, its own process group (timeout and cancel kill the whole tree) and output caps.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

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
    sandbox_env,
    sink_result,
)


class NoSandbox(Sandbox):
    name = "none"

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
        ws = Path(workspace_dir).resolve()
        ws.mkdir(parents=True, exist_ok=True)
        # req.cwd is already normalised to /workspace[/...]; map it onto the host directory.
        cwd = ws / os.path.relpath(req.cwd, WORKSPACE)
        env = sandbox_env(req)
        if "HOME" not in req.env:
            env["HOME"] = str(ws)
        sink = OutputSink(req.max_output, on_output)
        if not cwd.is_dir():
            sink.feed("stderr", f"sh: cd: can't cd to {req.cwd}\n".encode())
            return sink_result(started, sink, exit_code=1, sandbox_id="none")
        try:
            outcome = run_process(
                req.argv,
                env=env,
                cwd=str(cwd),
                stdin=req.stdin,
                timeout=req.timeout,
                sink=sink,
                cancel=cancel,
            )
        except OSError as exc:  # the program is missing or not executable: say it like sh
            sink.feed("stderr", f"{req.argv[0]}: {exc.strerror}\n".encode())
            code = 127 if isinstance(exc, FileNotFoundError) else 126
            return sink_result(started, sink, exit_code=code, sandbox_id="none")
        return sink_result(
            started,
            sink,
            exit_code=outcome.returncode,
            sandbox_id=f"none:{outcome.pid}",
            reason=outcome.reason,
        )

    def spawn(self, workspace_id: str, workspace_dir: Path, req: SpawnRequest) -> Spawned:
        if req.secret_env:
            # Here the server runs as the app's own user, beside every other tool process
            # of this backend: any of them could read /proc/<pid>/environ.
            raise SandboxError(
                "a server with secret environment variables needs an isolating sandbox "
                "(docker or bubblewrap): with 'none' any tool process could read them"
            )
        ws = Path(workspace_dir).resolve()
        ws.mkdir(parents=True, exist_ok=True)
        env = sandbox_env(req)
        if "HOME" not in req.env:
            env["HOME"] = str(ws)
        return Spawned(argv=list(req.argv), env=env, sandbox_id="none", cwd=str(ws))

    def health(self) -> tuple[bool, str]:
        return True, "no sandbox: commands run directly on the host as the app's own user"
