"""Health for machines: ``/healthz/live``, ``/healthz/ready`` and what ``manage.py health`` asks.

Live: the process answers. Ready: this process can do its job now — it reaches the database
(and every migration is applied), the channel layer or the broker, its keys are the fleet's and
read what is stored, and it sees the same shared directories as the other processes
(``infra.fleet``). A check that does not answer within ``CHECK_SECONDS`` fails: a probe must
answer, and a database that takes connections no more leaves a pool waiting for its timeout.
``/healthz`` stays the page for people.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connection, connections
from django.http import HttpRequest, JsonResponse

from chat_app.services import process_beats
from infra import access, fleet

CHECK_SECONDS = 3.0
# What ``manage.py health --kind`` names: the process kind, and the queue a worker must take.
ROLES = {
    "runner": ("runner", ""),
    "worker": ("worker", "tools"),
    "browser-worker": ("worker", "browser"),
    "beat": ("beat", ""),
}

_migrations_applied = False
_waiting: dict[str, threading.Event] = {}
_lock = threading.Lock()


def _within(name: str, seconds: float, check: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``check()`` in a thread of its own, given ``seconds``. One of each at a time: while an
    earlier one still waits (a database that does not answer), the next probe fails at once
    instead of piling up threads."""
    with _lock:
        if name in _waiting and not _waiting[name].is_set():
            return {name: {"ok": False, "error": "the previous check has not answered yet"}}
        done = _waiting[name] = threading.Event()
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result.update(check())
        except Exception as exc:
            result[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}".strip()}
        finally:
            done.set()

    threading.Thread(target=run, name=f"ready-{name}", daemon=True).start()
    if not done.wait(seconds):
        return {name: {"ok": False, "error": f"no answer within {seconds:g} s"}}
    return result


def _migrations() -> dict[str, Any]:
    """Applied once, applied for good: the plan is read until it is empty, then never again."""
    global _migrations_applied
    if _migrations_applied:
        return {"ok": True}
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if plan:
        first = plan[0][0]
        return {
            "ok": False,
            "error": (
                f"migrations not applied: {len(plan)} (first {first.app_label}.{first.name}); "
                "run `manage.py migrate` (distributed mode: once, as a job of its own)"
            ),
        }
    _migrations_applied = True
    return {"ok": True}


def _heartbeat(role: str) -> dict[str, Any]:
    """A process of ``role`` on this host reported itself lately (from its own thread, so a
    process that cannot reach the database is not healthy)."""
    from chat_app.services.runner_beats import runners_alive

    kind, queue = ROLES[role]
    host = fleet.this_host()
    found = [
        p
        for p in process_beats.processes_alive((kind,))
        if p.host == host and (not queue or queue in p.queues.split(","))
    ]
    if kind == "runner":  # and its event loop answers (the runner's own beat says so)
        loops = {r.name for r in runners_alive()}
        found = [p for p in found if p.name in loops]
    if not found:
        seconds = settings.PROCESS_HEARTBEAT_TIMEOUT
        return {"ok": False, "error": f"no {role} on {host} reported itself in {seconds} s"}
    return {"ok": True, "processes": [p.name for p in found]}


def _database_and_fleet(role: str) -> dict[str, Any]:
    """Everything that needs the database, in the thread ``_within`` gives it."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks: dict[str, Any] = {"database": {"ok": True, "engine": connection.vendor}}
        checks["migrations"] = _migrations()
        if not checks["migrations"]["ok"]:
            return checks  # the rest reads tables that may not be there yet
        checks["secrets"] = fleet.stored_secrets_check()
        if settings.MODE == "distributed":
            started = process_beats.me_started()
            checks["keys"] = fleet.keys_check(process_beats.fleet_members(), me_started=started)
            if role != "beat":
                current = process_beats.process_current()
                checks["shared_dirs"] = fleet.dirs_check(
                    process_beats.fleet_members(process_beats.DIR_KINDS),
                    me=current.name if current is not None else "",
                    me_started=started,
                )
            if role != "web":
                checks["heartbeat"] = _heartbeat(role)
        return checks
    finally:
        connections.close_all()  # this thread's connection (back to the pool, if one)


def _channel_layer() -> dict[str, Any]:
    layer = get_channel_layer()
    if layer is None:
        return {"channel_layer": {"ok": False, "error": "no channel layer configured"}}
    token = uuid.uuid4().hex

    async def roundtrip() -> bool:
        channel = await layer.new_channel()
        await layer.send(channel, {"type": "health.ping", "token": token})
        message = await layer.receive(channel)
        return bool(message.get("token") == token)

    async def within() -> bool:
        return await asyncio.wait_for(roundtrip(), CHECK_SECONDS)

    # On the server's own event loop (this runs in the view's thread), where the layer lives.
    try:
        return {"channel_layer": {"ok": async_to_sync(within)()}}
    except TimeoutError:
        return {"channel_layer": {"ok": False, "error": f"no answer within {CHECK_SECONDS:g} s"}}
    except Exception as exc:
        return {"channel_layer": {"ok": False, "error": f"{type(exc).__name__}: {exc}".strip()}}


def _broker() -> dict[str, Any]:
    if settings.MODE != "distributed":
        return {"broker": {"ok": True, "kind": "in-process"}}
    import redis

    client = redis.Redis.from_url(
        settings.CELERY_BROKER_URL, socket_timeout=CHECK_SECONDS, socket_connect_timeout=2.0
    )
    try:
        return {"broker": {"ok": bool(client.ping())}}
    finally:
        client.close()


def readiness(role: str = "web") -> dict[str, Any]:
    """The checks of a process of ``role`` (``web`` or one of ``ROLES``) and its verdict."""
    checks = _within("database", CHECK_SECONDS, lambda: _database_and_fleet(role))
    if role == "web":
        checks.update(_channel_layer())
    else:
        checks.update(_within("broker", CHECK_SECONDS + 1, _broker))
    reasons = [
        f"{name}: {check.get('error', 'failed')}"
        for name, check in checks.items()
        if not check["ok"]
    ]
    current = process_beats.process_current()
    return {
        "ok": not reasons,
        "status": "ready" if not reasons else "not ready",
        "mode": settings.MODE,
        "kind": role,
        **({"process": current.name} if current is not None else {}),
        "reasons": reasons,
        **checks,
    }


@access.public("a liveness probe: answers while the process runs, reads nothing")
def healthz_live(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "live"})


@access.public("a readiness probe: says whether this process can work, nothing about data")
def healthz_ready(request: HttpRequest) -> JsonResponse:
    report = readiness("web")
    return JsonResponse(report, status=200 if report["ok"] else 503)
