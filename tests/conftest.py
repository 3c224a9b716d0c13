"""Fixtures for the whole suite.

The suite runs in the mode the environment selects (see the Makefile): embedded (no
REDIS_URL: in-process worker thread, in-memory channel layer, SQLite file) or distributed
(REDIS_URL + DATABASE_URL: a separate ``celery worker`` process, channels_redis, Postgres).
Tests marked ``modes`` run in both; ``make test`` runs them twice.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.management.base import CommandError
from django.db import DatabaseError, connection

from tests.helpers import require, wait_for
from tests.llm_server import ScriptedLLM

# The multi-host suite needs the images of `make images` and runs alone: `make test-fleet`.
collect_ignore = [] if os.environ.get("CC_FLEET") == "1" else ["fleet"]

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API + ORM
# Every statement compiled once per process (infra.prepared) is compared with the ORM's own
# compilation on each call, here and in the servers and workers the tests start.
os.environ.setdefault("PREPARED_VERIFY", "true")
settings.PREPARED_VERIFY = os.environ["PREPARED_VERIFY"] == "true"

# This process's own PostgreSQL sessions, by name: a test that plays a database failover
# terminates every session but these (``TERMINATE_OTHER_CLIENTS``). The threads of this process (the
# websocket tests' executors, live servers) keep connections no fixture can reach; one killed
# under them fails the tests that come after, not the processes the failover is about.
TEST_SESSION_DB_NAME = "cc-test-session"
if settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
    settings.DATABASES["default"].setdefault("OPTIONS", {})["application_name"] = (
        TEST_SESSION_DB_NAME
    )
# Every session of a database but the test session's own: the database's name is the parameter.
TERMINATE_OTHER_CLIENTS = (
    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = %s "
    "AND pid <> pg_backend_pid() AND application_name <> 'cc-test-session'"
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if settings.MODE == "distributed":
        # Only the mode-sensitive tests run a second time in distributed mode (and not those
        # that swap an activity in-process: a worker process would not see the double).
        def wanted(item: pytest.Item) -> bool:
            if item.get_closest_marker("distributed_only"):
                return True
            return bool(item.get_closest_marker("modes")) and not item.get_closest_marker(
                "embedded_only"
            )
    else:
        # Faults of separate processes and of Redis exist only where those exist; these tests
        # run in the distributed pass of `make test` (and fail there if Redis is missing).
        def wanted(item: pytest.Item) -> bool:
            return not item.get_closest_marker("distributed_only")

    selected = [i for i in items if wanted(i)]
    deselected = [i for i in items if not wanted(i)]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected


def _uses_db(request: pytest.FixtureRequest) -> str | None:
    marker = request.node.get_closest_marker("django_db")
    names = request.fixturenames
    if "transactional_db" in names or (marker and marker.kwargs.get("transaction")):
        return "transactional_db"
    if "db" in names or marker is not None:
        return "db"
    return None


@pytest.fixture(autouse=True)
def _everyone_granted_everything(request: pytest.FixtureRequest) -> Iterator[None]:
    """Tests that are not about grants run as before grants came: Everyone may use every tool
    group, imported source and agent profile (those a test adds too), tool search aside
    unless marked ``tool_search``. A fresh test database otherwise grants members only the
    low-risk tools. Tests about grants are marked ``grants`` and set up their own."""
    db = _uses_db(request)
    if db is None or request.node.get_closest_marker("grants"):
        yield
        return
    # The shared processes first: they write at start (their beats, the default profile),
    # and a test transaction holding the rows written below would hold them back.
    for shared in ("worker_process", "app_server"):
        if shared in request.fixturenames:
            request.getfixturevalue(shared)
    request.getfixturevalue(db)
    from django.db.models.signals import post_save

    from chat_app.models import Agent
    from tools_app.models import ToolGrant, ToolSource
    from tools_app.registry import GROUPS
    from tools_app.services.grants import everyone_group

    everyone = everyone_group()
    # Tool search too is for tests about it (marked tool_search): with every tool granted it
    # would otherwise leave the others' requests with a few tools and tool_search.
    searching = request.node.get_closest_marker("tool_search") is not None
    rows = [
        ToolGrant(group=everyone, kind="group", name=name)
        for name in list(GROUPS)
        if searching or name != "tool_search"
    ]
    rows += [
        ToolGrant(group=everyone, kind="source", name=name)
        for name in ToolSource.objects.values_list("name", flat=True)
    ]
    if not searching:  # the migration grants it to Everyone
        ToolGrant.objects.filter(kind="group", name="tool_search").delete()
    # Staff may use every tool whatever the grants: switched off, it is offered to nobody.
    from tools_app.models import ToolGroupConfig

    ToolGroupConfig.objects.update_or_create(name="tool_search", defaults={"enabled": searching})
    ToolGrant.objects.bulk_create(rows, ignore_conflicts=True)
    everyone.agent_profiles.add(*Agent.objects.all())

    def source_saved(sender: Any, instance: Any, created: bool, **kwargs: Any) -> None:
        if created:
            ToolGrant.objects.bulk_create(
                [ToolGrant(group=everyone_group(), kind="source", name=instance.name)],
                ignore_conflicts=True,
            )

    def agent_saved(sender: Any, instance: Any, created: bool, **kwargs: Any) -> None:
        if created:
            instance.groups.add(everyone_group())

    post_save.connect(source_saved, sender=ToolSource, dispatch_uid="tests-grant-sources")
    post_save.connect(agent_saved, sender=Agent, dispatch_uid="tests-grant-agents")
    try:
        yield
    finally:
        post_save.disconnect(sender=ToolSource, dispatch_uid="tests-grant-sources")
        post_save.disconnect(sender=Agent, dispatch_uid="tests-grant-agents")


@pytest.fixture(scope="session")
def mode() -> str:
    return settings.MODE


@pytest.fixture(scope="session", autouse=True)
def _fresh_workspaces() -> None:
    """Each test session starts with no workspaces. Ids restart with each test database, so a
    conversation's workspace of an earlier run (an upload, a git repository, files of another
    sandbox uid) would otherwise meet a test of this run under the same name."""
    workspaces = Path(settings.WORKSPACES_DIR)
    if workspaces.is_dir() and workspaces.parent.name.startswith("test-"):
        for entry in workspaces.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)


@pytest.fixture(scope="session", autouse=True)
def _flush_retries_a_deadlock() -> Iterator[None]:
    """A transactional test ends with Django's flush (one TRUNCATE of every table). In the
    distributed pass the shared worker and runner processes keep working between tests (a
    call a test dispatched and did not wait for, a runner's beat), and PostgreSQL may pick the
    TRUNCATE as a deadlock's victim: the flush failed and the next test found the last one's
    rows. A deadlock victim's transaction was rolled back whole, so trying again is safe."""
    from django.core.management.commands import flush

    original = flush.Command.handle

    def handle(self: Any, **options: Any) -> Any:
        for attempt in range(5):
            try:
                return original(self, **options)
            except CommandError as exc:
                cause = exc.__cause__
                if attempt == 4 or "deadlock" not in str(cause).lower():
                    raise
                time.sleep(0.2 * (attempt + 1))
        return None

    flush.Command.handle = handle  # type: ignore[method-assign]
    try:
        yield
    finally:
        flush.Command.handle = original  # type: ignore[method-assign]


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    """pytest-django's, plus: before the PostgreSQL test database is dropped, end the sessions
    still on it. Processes the tests started (workers, app servers) have been stopped, but
    their server sessions end a moment later, and threads of this process keep their own
    connections; either made the drop fail with "being accessed by other users"."""
    yield
    if connection.vendor != "postgresql":
        return
    # Without the right to signal them (not a superuser), the drop is left to warn as before.
    with (
        django_db_blocker.unblock(),
        contextlib.suppress(DatabaseError),
        connection.cursor() as cursor,
    ):
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


def test_database_url() -> str:
    """A URL for the test database, for processes the tests start (worker, app server)."""
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    user = s.get("USER") or ""
    password = f":{s['PASSWORD']}" if s.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    return f"postgres://{auth}{s.get('HOST') or '127.0.0.1'}:{s.get('PORT') or 5432}/{s['NAME']}"


def child_env(**extra: str) -> dict[str, str]:
    env = os.environ.copy()
    # The app's processes use the database pool as in production (the pytest process does
    # not: see the Makefile).
    env.update(DATABASE_URL=test_database_url(), PYTHONUNBUFFERED="1", DB_POOL="true")
    # This session's key, given explicitly: distributed mode generates none (every process
    # of a deployment must be given the same; tests/fleet_key.py sets the session's).
    env.setdefault("SECRET_KEY", settings.SECRET_KEY)
    # Liveness files per test pass, as per container (the two passes run side by side).
    env.setdefault("LIVENESS_DIR", str(Path(settings.VAR_DIR) / "alive"))
    env.update(extra)
    env.pop("CC_TEST_DB_NAME", None)
    return env


@pytest.fixture(scope="session")
def _redis_clean() -> None:
    if settings.MODE != "distributed":
        return
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL)
    try:
        client.ping()
    except redis.exceptions.ConnectionError:
        require(False, f"Redis not reachable at {settings.REDIS_URL}")
    client.flushdb()


# --- the session's shared deployment -----------------------------------------------------------
# Distributed tests share app processes (a tools worker, an agent runner, e2e web servers) on
# the test Redis and the test database. Fault tests run a private deployment (tests/stack.py)
# on its own Redis but the same database; while one runs, the shared processes are paused, or
# their maintenance could take over the private stack's work (queue again a round or a call
# that waited too long, move on a turn left in "tools") and send it over the shared Redis, to
# the shared runner and worker, where the private stack's page never sees its events. (The
# stack's shorter heartbeat timeout makes its own pass usually come first; pausing makes it
# certain.)
_SHARED: list[subprocess.Popen[bytes]] = []


def shared_process(proc: subprocess.Popen[bytes]) -> subprocess.Popen[bytes]:
    _SHARED.append(proc)
    return proc


def _process_tree(pid: int) -> list[int]:
    found = [pid]
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as children:
                for child in children.read().split():
                    found += _process_tree(int(child))
    return found


@contextlib.contextmanager
def shared_processes_paused(
    only: Iterable[subprocess.Popen[bytes]] | None = None,
) -> Iterator[None]:
    """SIGSTOP the session's shared processes (or ``only`` these) and their children for the
    block; SIGCONT after."""
    procs = _SHARED if only is None else list(only)
    pids = [pid for proc in procs if proc.poll() is None for pid in _process_tree(proc.pid)]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def start_agent_runner(log_name: str = "test-runner.log", **env: str) -> subprocess.Popen[bytes]:
    """Distributed mode: a real ``manage.py agent_runner`` process on the test database
    (needs database access: it waits for the runner's first report)."""
    from chat_app.services.runner_beats import runners_alive

    name = f"test-runner-{uuid.uuid4().hex[:6]}"
    log = open(ROOT / "var" / log_name, "ab")  # noqa: SIM115 - closed by the process's end
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "agent_runner", "--name", name],
        cwd=ROOT,
        env=child_env(**env),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    shared_process(proc)
    wait_for(
        lambda: proc.poll() is not None or any(r.name == name for r in runners_alive()),
        timeout=60,
        message="the agent runner to report itself",
    )
    assert proc.poll() is None, f"agent runner exited; see var/{log_name}"
    return proc


def start_celery_worker(log_name: str = "test-worker.log", **env: str) -> subprocess.Popen[bytes]:
    """Distributed mode: a real ``celery worker`` process for the tool queues."""
    from infra.celery_app import app

    name = f"test-{uuid.uuid4().hex[:6]}@%h"
    log = open(ROOT / "var" / log_name, "ab")  # noqa: SIM115 - closed by the process's end
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "controlcenter",
            "worker",
            "-Q",
            "tools,browser",
            "-c",
            "4",
            "-n",
            name,
            "-l",
            "WARNING",
            "--without-mingle",
            "--without-gossip",
        ],
        cwd=ROOT,
        env=child_env(**env),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    shared_process(proc)
    wait_for(
        lambda: (
            proc.poll() is not None
            or any(name.split("@")[0] in key for r in app.control.ping(timeout=0.3) for key in r)
        ),
        timeout=60,
        message="the celery worker to answer ping",
    )
    assert proc.poll() is None, f"celery worker exited; see var/{log_name}"
    return proc


def start_beat_process(
    log_name: str = "test-beat.log", tick: float = 0.5, **env: str
) -> subprocess.Popen[bytes]:
    """Distributed mode: a real ``celery beat`` process sending the Schedules tick."""
    log = open(ROOT / "var" / log_name, "ab")  # noqa: SIM115 - closed by the process's end
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "controlcenter", "beat", "-l", "INFO"],
        cwd=ROOT,
        env=child_env(SCHEDULES_TICK_SECONDS=str(tick), **env),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    return shared_process(proc)


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 15) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


@pytest.fixture(scope="session")
def worker_process(
    django_db_setup: Any, django_db_blocker: Any, _redis_clean: None
) -> Iterator[list[subprocess.Popen[bytes]] | None]:
    """Distributed mode: a real ``celery worker`` process and a real agent runner process."""
    if settings.MODE != "distributed":
        yield None
        return
    with django_db_blocker.unblock():
        procs = [start_celery_worker(), start_agent_runner()]
    try:
        yield procs
    finally:
        for proc in procs:
            stop_process(proc)


@pytest.fixture
def worker(transactional_db: None, worker_process: Any) -> str:
    """Something that runs Celery tasks, in the current mode. Needs committed data."""
    if settings.MODE == "embedded":
        from chat_app.embedded import start_embedded_worker

        start_embedded_worker()
    return settings.MODE


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


@pytest.fixture
def provider(llm: ScriptedLLM, transactional_db: None) -> Any:
    from chat_app.models import Provider

    return Provider.objects.create(
        name="scripted",
        kind="openai",
        base_url=llm.openai_base_url,
        model="scripted-model",
        is_default=True,
        retry_backoff_seconds=0.05,  # retries as in production, without the seconds of waiting
    )


@pytest.fixture
def user(transactional_db: None) -> Any:
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user("alice", password="alice-password-1")


@pytest.fixture
def other_user(transactional_db: None) -> Any:
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user("bob", password="bob-password-1")


@pytest.fixture
def leads(other_user: Any) -> Any:
    """An approver group: ``other_user`` (bob) approves what ``user`` (alice) asks for."""
    from django.contrib.auth.models import Group

    group = Group.objects.create(name="leads")
    group.user_set.add(other_user)
    return group


@pytest.fixture
def staff_user(transactional_db: None) -> Any:
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_superuser("root", password="root-password-1")


@pytest.fixture
def conversation(user: Any) -> Any:
    from chat_app.models import Conversation

    return Conversation.objects.create(owner=user, title="Test conversation")


def wait_turn(turn_id: int, *, timeout: float = 15.0) -> Any:
    from chat_app.models import Turn

    def finished() -> Any:
        turn = Turn.objects.get(pk=turn_id)
        return turn if not turn.is_running else None

    return wait_for(finished, timeout=timeout, message=f"turn {turn_id} to finish")
