"""``/healthz``: what an operator needs to know at a glance, and no secrets."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
import uuid
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse

from infra import access

_provider_cache: dict[str, tuple[float, dict[str, Any]]] = {}


def _check_database() -> dict[str, Any]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return {"ok": True, "engine": connection.vendor}
    except Exception as exc:
        return {"ok": False, "error": type(exc).__name__}


def _check_channel_layer() -> dict[str, Any]:
    layer = get_channel_layer()
    if layer is None:
        return {"ok": False, "error": "no channel layer configured"}

    async def roundtrip() -> bool:
        channel = await layer.new_channel()
        await layer.send(channel, {"type": "health.ping", "token": token})
        message = await layer.receive(channel)
        return message.get("token") == token

    token = uuid.uuid4().hex
    try:
        return {"ok": bool(async_to_sync(roundtrip)()), "backend": type(layer).__name__}
    except Exception as exc:
        return {"ok": False, "backend": type(layer).__name__, "error": type(exc).__name__}


def _check_worker() -> dict[str, Any]:
    if settings.MODE == "embedded":
        from chat_app.embedded import embedded_worker_alive

        return {"ok": embedded_worker_alive(), "kind": "in-process"}
    from infra.celery_app import app

    try:
        replies = app.control.ping(timeout=0.5) or []
    except Exception as exc:
        return {"ok": False, "error": type(exc).__name__}
    return {"ok": bool(replies), "workers": len(replies)}


def _check_agent_runner() -> dict[str, Any]:
    if settings.MODE == "embedded":
        from chat_app.embedded import embedded_runner

        runner = embedded_runner()
        if runner is None:
            return {"ok": False, "kind": "in-process", "error": "not started"}
        return {"ok": runner.alive, "kind": "in-process", "in_flight": runner.in_flight}
    from chat_app.services.runner_beats import runners_alive

    try:
        runners = runners_alive()
    except Exception as exc:
        return {"ok": False, "error": type(exc).__name__}
    return {
        "ok": bool(runners),
        "runners": len(runners),
        "in_flight": sum(r.in_flight for r in runners),
    }


def _check_provider() -> dict[str, Any]:
    from chat_app.services.providers import provider_default
    from infra.secrets import SecretDecryptionError

    try:
        provider = provider_default()
    except SecretDecryptionError as exc:  # this process's key is not the one that stored it
        return {"ok": False, "configured": True, "error": str(exc)}
    if provider is None:
        return {"ok": False, "configured": False}
    cached = _provider_cache.get(str(provider.pk))
    if cached and time.monotonic() - cached[0] < 30:
        return cached[1]
    info: dict[str, Any] = {"configured": True, "kind": provider.kind, "model": provider.model}
    base = provider.base_url or (
        "https://api.openai.com/v1" if provider.kind == "openai" else "https://api.anthropic.com"
    )
    try:
        # Any HTTP answer means reachable; an auth error still proves the endpoint is there.
        with urllib.request.urlopen(base.rstrip("/") + "/models", timeout=2.0) as response:  # noqa: S310 - admin-configured URL
            info.update(ok=True, http_status=response.status)
    except urllib.error.HTTPError as exc:
        info.update(ok=True, http_status=exc.code)
    except Exception as exc:
        info.update(ok=False, error=type(exc).__name__)
    _provider_cache[str(provider.pk)] = (time.monotonic(), info)
    return info


@access.public("a health probe: says whether this process can work, nothing about data")
def healthz(request: HttpRequest) -> JsonResponse:
    checks = {
        "database": _check_database(),
        "channel_layer": _check_channel_layer(),
        "worker": _check_worker(),
        "agent_runner": _check_agent_runner(),
        "provider": _check_provider(),
    }
    core_ok = all(checks[k]["ok"] for k in ("database", "channel_layer", "worker", "agent_runner"))
    # Always 200: the body says what is degraded; the page itself answering is the liveness.
    return JsonResponse(
        {"status": "ok" if core_ok else "degraded", "mode": settings.MODE, **checks}
    )
