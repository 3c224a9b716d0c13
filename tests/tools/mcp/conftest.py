"""MCP fixtures: real servers from the package index installed into the stdio servers' venv
(once per machine), and a streamable-HTTP server started in the test."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from tests.conftest import ROOT
from tests.e2e.conftest import app_server, browser, page  # noqa: F401  (fixtures)
from tests.helpers import require
from tests.tools.mcp.servers import Observed, serve_mcp

PACKAGES = ["mcp-server-time", "mcp-server-git"]
SHARED_VENV = ROOT / "var" / "mcp-venv-test"


@pytest.fixture(scope="session")
def mcp_venv() -> Path:
    """The venv with the PyPI servers, shared by both test modes; the configured
    MCP_SERVERS_VENV links to it."""
    from tools_app.executors.mcp.services import mcp_install
    from tools_app.services.sources import SourceError

    SHARED_VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(SHARED_VENV.parent / "mcp-venv-test.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = SHARED_VENV / f".installed-{'-'.join(PACKAGES)}"
        if not done.exists():
            try:
                mcp_install(PACKAGES, venv=SHARED_VENV)
            except SourceError as exc:
                require(False, f"cannot install {PACKAGES} from the package index: {exc}")
            done.touch()
    configured = Path(settings.MCP_SERVERS_VENV)
    if configured.resolve() != SHARED_VENV.resolve() and (
        configured.is_symlink() or not configured.exists()
    ):
        configured.unlink(missing_ok=True)
        configured.parent.mkdir(parents=True, exist_ok=True)
        configured.symlink_to(SHARED_VENV)
    return SHARED_VENV


ENV_SERVER = "cc-test-env-server"


@pytest.fixture(scope="session")
def env_server(mcp_venv: Path) -> str:
    """The command of the secret-environment probe (env_server.py), installed into the
    servers' venv as a console script (the venv has the SDK: the PyPI servers need it)."""
    source = (Path(__file__).parent / "env_server.py").read_text()
    script = mcp_venv / "bin" / ENV_SERVER
    text = f"#!{mcp_venv.resolve()}/bin/python\n{source}"
    if not script.exists() or script.read_text() != text:
        part = script.with_suffix(f".{os.getpid()}")
        part.write_text(text)
        part.chmod(0o755)
        part.replace(script)
    return ENV_SERVER


@pytest.fixture
def mcp_http() -> Iterator[tuple[str, Observed]]:
    from tools_app.executors.mcp.runtime import runtime

    with serve_mcp() as served:
        yield served
        runtime().close_all(timeout=5)  # before the server stops: no connection left open


@pytest.fixture(autouse=True)
def _forget_imported() -> Iterator[None]:
    yield
    from tools_app.executors.mcp.runtime import runtime
    from tools_app.imported import imported_reset

    runtime().close_all(timeout=5)
    imported_reset()
    # The conversations' warm containers too: they run as the sandbox's uid, and bubblewrap's
    # RLIMIT_NPROC counts every process of that uid on the host (a session's worth of warm
    # containers left for the end starved later bubblewrap sandboxes: EAGAIN).
    with contextlib.suppress(Exception):  # no engine: nothing to release
        from tools_app.sandbox import get_sandbox

        get_sandbox("docker").reap_idle(0)


def wait_call(call_id: int, timeout: float = 30.0) -> Any:
    from tests.helpers import wait_for
    from tools_app.models import ToolCall

    return wait_for(
        lambda: ToolCall.objects.filter(pk=call_id, status__in=ToolCall.TERMINAL).first(),
        timeout=timeout,
        message=f"tool call {call_id} to finish",
    )
