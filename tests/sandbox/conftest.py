"""Fixtures for the sandbox tests: one backend instance per session, workspaces, helpers.

An unavailable backend skips its tests, except under CI=true where it fails them: CI must
prove containment, not quietly skip it. The docker tests label their containers with a
per-run value so reaping and cleanup never touch the containers of a live app on the engine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import require
from tools_app.sandbox.base import ExecRequest, ExecResult, Sandbox
from tools_app.sandbox.bwrap_backend import BubblewrapSandbox
from tools_app.sandbox.none_backend import NoSandbox

ROOT = Path(__file__).resolve().parents[2]
IMAGE = os.environ.get("SANDBOX_IMAGE") or "controlcenter-sandbox:latest"
TEST_LABEL = f"test-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def unavailable(reason: str) -> None:
    require(False, f"sandbox backend unavailable: {reason}")


@dataclass
class Box:
    """A backend plus one workspace, with shorthands for the tests."""

    sandbox: Sandbox
    workspace_id: str
    dir: Path

    @property
    def name(self) -> str:
        return self.sandbox.name

    def run(
        self,
        *argv: str,
        on_output: Callable[[str, str], None] | None = None,
        cancel: Any = None,
        **kwargs: Any,
    ) -> ExecResult:
        req = ExecRequest(list(argv), **kwargs)
        return self.sandbox.exec(
            self.workspace_id, self.dir, req, on_output=on_output, cancel=cancel
        )

    def sh(self, script: str, **kwargs: Any) -> ExecResult:
        return self.run("sh", "-c", script, **kwargs)

    def processes(self, marker: str, sandbox_id: str) -> list[str]:
        """Command lines still running that contain ``marker`` (inside the container for
        docker, on the host otherwise: bubblewrap's processes are visible there)."""
        if self.name == "docker":
            api = self.sandbox.api  # type: ignore[attr-defined]
            try:
                exec_id = api.exec_create(sandbox_id, ["ps", "-eo", "args"])["Id"]
            except Exception:  # container gone: nothing of it can still run
                return []
            lines = api.exec_start(exec_id).decode().splitlines()
        else:
            proc = subprocess.run(["pgrep", "-af", marker], capture_output=True, text=True)
            lines = proc.stdout.splitlines()
        return [line for line in lines if marker in line and "pgrep" not in line]

    def wait_until_gone(self, marker: str, sandbox_id: str, timeout: float = 3.0) -> list[str]:
        deadline = time.monotonic() + timeout
        while (left := self.processes(marker, sandbox_id)) and time.monotonic() < deadline:
            time.sleep(0.05)
        return left


@pytest.fixture(scope="session")
def sandbox_base() -> Iterator[Path]:
    # Searchable (0711) so the bubblewrap uid can reach workspaces below it; pytest's own
    # tmp_path lives under a 0700 directory.
    base = Path(tempfile.mkdtemp(prefix="cc-sbx-tests-"))
    base.chmod(0o711)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _build_image() -> str | None:
    script = ROOT / "docker" / "build-sandbox-image.sh"
    env = {**os.environ, "IMAGE": IMAGE}
    try:
        proc = subprocess.run(
            [str(script), "full"], env=env, capture_output=True, text=True, timeout=900
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"could not build {IMAGE}: {exc}"
    if proc.returncode != 0:
        return f"could not build {IMAGE}: {proc.stderr.strip()[-2000:]}"
    return None


@pytest.fixture(scope="session")
def docker_sandbox() -> Iterator[Sandbox | str]:
    """The docker backend on the real sandbox image (built once if missing), or why not."""
    try:
        import docker

        client = docker.from_env(timeout=10)
        client.ping()
    except Exception as exc:
        yield f"Docker engine not reachable: {exc}"
        return
    try:
        client.images.get(IMAGE)
    except docker.errors.ImageNotFound:
        problem = _build_image()
        if problem:
            yield problem
            return
    from tools_app.sandbox.docker_backend import DockerSandbox

    sandbox = DockerSandbox(image=IMAGE, pool_label=TEST_LABEL)
    ok, detail = sandbox.health()
    yield sandbox if ok else detail
    for container in client.containers.list(
        all=True, filters={"label": f"controlcenter.sandbox={TEST_LABEL}"}
    ):
        container.remove(force=True)


@pytest.fixture(scope="session")
def docker_exec_sandbox(docker_sandbox: Sandbox | str) -> Sandbox | str:
    """The docker backend without its in-container runner: one ``docker exec`` per command
    (what images without python3 get)."""
    if isinstance(docker_sandbox, str):
        return docker_sandbox
    from tools_app.sandbox.docker_backend import DockerSandbox

    return DockerSandbox(image=IMAGE, pool_label=TEST_LABEL, runner=False)


@pytest.fixture(scope="session")
def bubblewrap_sandbox() -> Sandbox | str:
    sandbox = BubblewrapSandbox()
    ok, detail = sandbox.health()
    return sandbox if ok else detail


@pytest.fixture(scope="session")
def none_sandbox() -> Sandbox:
    return NoSandbox()


def _sandbox(request: pytest.FixtureRequest, name: str) -> Sandbox:
    sandbox = request.getfixturevalue(f"{name}_sandbox")
    if isinstance(sandbox, str):
        unavailable(f"{name}: {sandbox}")
    return sandbox


@pytest.fixture
def box(request: pytest.FixtureRequest, sandbox_base: Path) -> Box:
    """A backend (by parametrised name) with a workspace shared across tests, so the docker
    tests reuse one warm container; tests that need their own use ``fresh_box``."""
    name = request.param
    sandbox = _sandbox(request, name)
    ws = sandbox_base / f"shared-{name}"
    return Box(sandbox, f"shared-{name}-{TEST_LABEL}", ws)


@pytest.fixture
def fresh_box(request: pytest.FixtureRequest, sandbox_base: Path) -> Box:
    name = request.param
    sandbox = _sandbox(request, name)
    ws_id = f"t-{uuid.uuid4().hex[:12]}"
    return Box(sandbox, ws_id, sandbox_base / ws_id)


@pytest.fixture
def docker_box(request: pytest.FixtureRequest, sandbox_base: Path) -> Box:
    """Docker backend with its own workspace (and so its own warm container)."""
    sandbox = _sandbox(request, "docker")
    ws_id = f"t-{uuid.uuid4().hex[:12]}"
    return Box(sandbox, ws_id, sandbox_base / ws_id)
