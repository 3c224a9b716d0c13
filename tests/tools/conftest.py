"""Shared fixtures for the executor tests (file, shell, dev, http).

Every test here drives a tool through the real path: ``toolcall_bind`` (schema + policy) and
``toolcall_execute`` (watchdog + activity + sandbox) in this process, or the Celery worker for
what only exists there (streaming, Stop, slash commands). The sandbox backend is chosen per test
with the group settings, exactly as an admin would.

A conversation's id names its workspace (``c<id>``) and its warm docker container
(``cc-sbx-c<id>-…``). The ids used here are random per run and stable per backend, so the docker
tests reuse one warm container, and two test runs sharing one engine (with different
``CC_VAR_DIR``) do not fight over a container name.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import stat
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from tests.helpers import require
from tools_app.models import ToolCall, ToolGroupConfig
from tools_app.runtime import BindContext, workspace_dir_for
from tools_app.sandbox import get_sandbox
from tools_app.services.binding import CallRequest, toolcall_bind
from tools_app.services.execution import toolcall_execute

DOCKER = pytest.param("docker", marks=pytest.mark.docker)
ISOLATED = [DOCKER, "bubblewrap"]
SANDBOXED_GROUPS = ("file", "shell", "dev")
SANDBOX_UID = settings.SANDBOX_UID

_ID_BASE = random.SystemRandom().randrange(10**8, 9 * 10**8)
_SLOTS = {"docker": 0, "bubblewrap": 1, "none": 2, "http": 3}
_used_workspaces: set[str] = set()
_health: dict[str, tuple[bool, str]] = {}


def conversation_id_for(backend: str, slot: int = 0) -> int:
    return _ID_BASE + 10 * _SLOTS[backend] + slot


def require_backend(name: str) -> None:
    """Skip (or, under CI=true, fail) when the backend cannot run here."""
    if name not in _health:
        try:
            _health[name] = get_sandbox(name).health()
        except Exception as exc:  # an engine that is not there at all
            _health[name] = (False, f"{type(exc).__name__}: {exc}")
    ok, detail = _health[name]
    require(ok, f"sandbox backend {name} unavailable: {detail}")


def configure(group: str, **values: Any) -> None:
    """Store a group's settings the way the Tools Manager does, failing loudly on typos:
    ``selectors.group_settings`` silently falls back to the defaults for invalid settings."""
    from tools_app.selectors import group_named

    found = group_named(group)  # an imported source's group too
    assert found is not None, f"no tool group {group!r}"
    found.settings_model.model_validate(values)
    ToolGroupConfig.objects.update_or_create(name=group, defaults={"settings": values})


def use_backend(backend: str, **extra: dict[str, Any]) -> None:
    """Run every sandboxed group on ``backend``; ``extra`` adds settings per group."""
    for group in SANDBOXED_GROUPS:
        configure(group, sandbox_backend=backend, **extra.get(group, {}))


def _ensure_searchable(path: Path) -> None:
    """bubblewrap runs as the sandbox uid, which must be able to walk down to each workspace."""
    for directory in [path, *path.parents]:
        mode = directory.stat().st_mode
        if not mode & stat.S_IXOTH:
            if settings.VAR_DIR in (directory, *directory.parents):
                directory.chmod(mode | stat.S_IXOTH)
            else:
                pytest.fail(f"{directory} is not searchable by uid {SANDBOX_UID}")


def clear_directory(path: Path) -> None:
    """Empty a workspace from the host without following any link the sandbox left in it."""
    for child in path.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


@dataclass
class Tools:
    """Calls tools as one user in one conversation (so: one workspace)."""

    user_id: int
    conversation_id: int
    backend: str

    @property
    def workspace_id(self) -> str:
        return f"c{self.conversation_id}"

    @property
    def workspace(self) -> Path:
        return workspace_dir_for(self.workspace_id)

    def bind(self, tool: str, arguments: dict[str, Any] | str, source: str = "api") -> ToolCall:
        return toolcall_bind(
            request=CallRequest(tool=tool, arguments=arguments),
            ctx=BindContext(
                user_id=self.user_id, conversation_id=self.conversation_id, source=source
            ),
        )

    def call(self, tool: str, /, **arguments: Any) -> ToolCall:
        """Bind and, when allowed, execute in this process; the finished call."""
        call = self.bind(tool, arguments)
        if call.status == ToolCall.Status.QUEUED:
            toolcall_execute(tool_call_id=call.pk)
            call.refresh_from_db()
        return call

    def call_unchecked(self, tool: str, /, **arguments: Any) -> ToolCall:
        """Execute a call that binding never saw: as if policy had missed it. The sandbox (and
        the helper inside it) must hold on its own."""
        from tools_app.registry import GROUPS, get_tool

        spec = get_tool(tool)
        assert spec is not None
        call = ToolCall.objects.create(
            conversation_id=self.conversation_id,
            user_id=self.user_id,
            source="api",
            tool=tool,
            group=spec.tool_group,
            queue=GROUPS[spec.tool_group].queue,
            arguments=arguments,
            raw_arguments=json.dumps(arguments),
            status=ToolCall.Status.QUEUED,
            policy_verdict="allowed",
        )
        toolcall_execute(tool_call_id=call.pk)
        call.refresh_from_db()
        return call

    def sh(self, command: str) -> ToolCall:
        """Run a shell line as the model would (shell_exec), and insist that it worked."""
        call = self.call("shell_exec", command=command)
        assert call.status == ToolCall.Status.SUCCEEDED, (call.error, call.result)
        return call


def call_text(call: ToolCall) -> str:
    """Everything a call reported, for leak checks."""
    return "\n".join(
        [json.dumps(call.result, ensure_ascii=False), call.output or "", call.error or ""]
    )


@pytest.fixture(scope="session", autouse=True)
def _release_sandboxes() -> Iterator[None]:
    yield
    if not _used_workspaces:
        return
    try:
        docker = get_sandbox("docker")
        for workspace_id in _used_workspaces:
            docker.release(workspace_id)
    except Exception:  # noqa: S110 - no engine: nothing to release
        pass
    for workspace_id in _used_workspaces:
        shutil.rmtree(Path(settings.WORKSPACES_DIR) / workspace_id, ignore_errors=True)


def make_tools(user: Any, backend: str, slot: int = 0) -> Tools:
    """Tools in a conversation (so a workspace, emptied now) reserved for ``backend`` and
    ``slot``; ``backend`` only picks the id here ("http" for tests that need no sandbox)."""
    from chat_app.models import Conversation

    conversation = Conversation.objects.create(
        pk=conversation_id_for(backend, slot), owner=user, title=f"tools on {backend}"
    )
    tools = Tools(user_id=user.pk, conversation_id=conversation.pk, backend=backend)
    _used_workspaces.add(tools.workspace_id)
    workspace = tools.workspace
    _ensure_searchable(workspace.parent)
    clear_directory(workspace)
    return tools


@pytest.fixture
def backend(request: pytest.FixtureRequest, db: None) -> str:
    """The sandbox backend (indirect parametrisation); every sandboxed group uses it."""
    name = str(request.param)
    require_backend(name)
    use_backend(name)
    return name


@pytest.fixture
def owner(db: None) -> Any:
    """The conversation's owner. No password: hashing one costs 0.3 s, per test.

    Tests that only execute calls in this thread run inside a rolled-back transaction (the
    watchdog thread only reads, and SQLite's WAL lets it); tests with a worker or threads of
    their own get ``transactional_db`` through ``worker`` or by asking for it."""
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user("tool-tester")


@pytest.fixture
def tools(owner: Any, backend: str) -> Tools:
    """Tools for a conversation whose workspace is empty at the start of the test."""
    return make_tools(owner, backend)


# -- canaries ---------------------------------------------------------------------------------


@dataclass
class Canary:
    """A unique secret planted OUTSIDE the workspace, where an escape would land: the
    workspaces directory itself (``../secret.txt``), another conversation's workspace, and a
    host directory (for absolute symlinks). Readable by the sandbox uid on purpose."""

    secret: str
    workspaces: Path
    sibling: str  # another conversation's workspace id
    host_dir: Path
    files: list[Path] = field(default_factory=list)
    _listing: dict[Path, list[str]] = field(default_factory=dict)

    def plant(self) -> None:
        for directory in (self.workspaces / self.sibling, self.host_dir):
            directory.mkdir(parents=True, exist_ok=True)
            directory.chmod(0o755)
        self.files = [
            self.workspaces / "secret.txt",
            self.workspaces / self.sibling / "secret.txt",
            self.host_dir / "secret.txt",
        ]
        for path in self.files:
            path.write_text(f"{self.secret}\n")
            path.chmod(0o644)
        self._listing = {d: self._entries(d) for d in self.watched}

    def plant_dir(self, name: str) -> Path:
        """Another outside directory holding the secret (as ``passwd``), for swap targets."""
        directory = self.host_dir / name
        directory.mkdir(mode=0o755)
        (directory / "passwd").write_text(f"{self.secret}\n")
        (directory / "passwd").chmod(0o644)
        self.files.append(directory / "passwd")
        self._listing = {d: self._entries(d) for d in self.watched}
        return directory

    @property
    def watched(self) -> list[Path]:
        return [self.workspaces / self.sibling, self.host_dir]

    @staticmethod
    def _entries(directory: Path) -> list[str]:
        return sorted(os.listdir(directory))

    def expand(self, text: str) -> str:
        return (
            text.replace("@SECRET@", self.secret)
            .replace("@SIBLING@", self.sibling)
            .replace("@HOST@", str(self.host_dir))
        )

    def assert_safe(self, *calls: ToolCall) -> None:
        """Nothing leaked into the calls, nothing outside the workspace changed."""
        for call in calls:
            assert self.secret not in call_text(call), f"canary leaked: {call_text(call)[:2000]}"
            assert "root:x:0:0" not in call_text(call), "a passwd file outside the workspace leaked"
        for path in self.files:
            assert path.read_text() == f"{self.secret}\n", f"{path} was modified"
        for directory, before in self._listing.items():
            assert self._entries(directory) == before, f"{directory} changed"
        strays = {"planted.txt", "pwned.txt"} & set(os.listdir(self.workspaces))
        assert not strays, f"files were created outside the workspace: {strays}"


@pytest.fixture
def canary() -> Iterator[Canary]:
    workspaces = Path(settings.WORKSPACES_DIR)
    workspaces.mkdir(parents=True, exist_ok=True)
    host_dir = Path(f"/tmp/cc-canary-{uuid.uuid4().hex[:10]}")
    token = uuid.uuid4().hex
    c = Canary(
        secret=f"CANARY-{token}",
        workspaces=workspaces,
        sibling=f"c{_ID_BASE + 99}",
        host_dir=host_dir,
    )
    c.plant()
    try:
        yield c
    finally:
        shutil.rmtree(host_dir, ignore_errors=True)
        shutil.rmtree(workspaces / c.sibling, ignore_errors=True)
        (workspaces / "secret.txt").unlink(missing_ok=True)


# -- events -----------------------------------------------------------------------------------


class EventTap:
    """Collects the events published to a channel-layer group, from a loop in a thread
    (the in-memory layer of embedded mode, or Redis in distributed mode)."""

    def __init__(self, group: str) -> None:
        self.group = group
        self.events: list[tuple[float, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"tap-{group}", daemon=True)

    def __enter__(self) -> EventTap:
        self._thread.start()
        assert self._ready.wait(10), "the event tap did not subscribe"
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        asyncio.run(self._listen())

    async def _listen(self) -> None:
        from channels.layers import get_channel_layer

        layer = get_channel_layer()
        channel = await layer.new_channel()
        await layer.group_add(self.group, channel)
        self._ready.set()
        # One receive stays pending across stop checks: cancelling channels_redis's receive
        # (asyncio.wait_for with a timeout) can drop a message it has already popped.
        pending: asyncio.Future[dict[str, Any]] | None = None
        try:
            while not self._stop.is_set():
                if pending is None:
                    pending = asyncio.ensure_future(layer.receive(channel))
                done, _ = await asyncio.wait({pending}, timeout=0.1)
                if not done:
                    continue
                message, pending = pending.result(), None
                with self._lock:
                    self.events.append((time.monotonic(), message.get("payload", {})))
        finally:
            if pending is not None:
                pending.cancel()
            await layer.group_discard(self.group, channel)

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [e for _, e in self.timed(kind)]

    def timed(self, kind: str) -> list[tuple[float, dict[str, Any]]]:
        """(arrival time, event) pairs of one type, in arrival order."""
        with self._lock:
            return [(t, e) for t, e in self.events if e.get("type") == kind]


# -- host processes ---------------------------------------------------------------------------


def sandbox_processes(backend: str, marker: str, *, container: str = "") -> list[str]:
    """Command lines of processes still running with ``marker`` in them: inside the container
    for docker (``docker exec ps``), else host processes of the sandbox uid (bubblewrap's
    processes are ordinary host processes of that uid)."""
    if backend == "docker":
        proc = subprocess.run(
            ["docker", "exec", container, "ps", "-eo", "args"],
            capture_output=True,
            text=True,
            timeout=20,
        )
        if proc.returncode != 0 and "is not running" in proc.stderr:
            return []
        assert proc.returncode == 0 or "No such container" in proc.stderr, proc.stderr
        lines = proc.stdout.splitlines()
    else:
        proc = subprocess.run(
            ["pgrep", "-a", "-u", str(SANDBOX_UID), "-f", marker],
            capture_output=True,
            text=True,
            timeout=20,
        )
        lines = [line.split(" ", 1)[1] for line in proc.stdout.splitlines()]
    return [line.strip() for line in lines if marker in line]
