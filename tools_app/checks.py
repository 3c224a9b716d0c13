"""System checks for the tool settings operators get wrong (``manage.py check``).

The sandbox check talks to the Docker engine and starts a bubblewrap probe, so it is a
deployment check (``manage.py check --deploy``, or ``--deploy --tag sandbox`` alone): every
management command runs the ordinary checks first, health checks included, and those stay
free of I/O, as Django keeps its own database checks opt-in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core import checks


def sandbox_reachable(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    from tools_app.sandbox.selection import configured_backend_health

    backend, ok, detail = configured_backend_health()
    if not ok:
        return [
            checks.Warning(
                f"sandbox backend {backend} is unreachable: {detail}",
                hint="Start Docker and run `make sandbox-image`, install bubblewrap, or set "
                "SANDBOX_BACKEND. Tool calls that need a sandbox fail until one works.",
                id="tools_app.W001",
            )
        ]
    if backend == "none":
        return [
            checks.Warning(
                "SANDBOX_BACKEND=none: tool commands run on this host with no isolation",
                hint="Use docker or bubblewrap wherever people other than you chat.",
                id="tools_app.W002",
            )
        ]
    return []


def chromium_path_exists(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    configured = settings.CHROMIUM_PATH
    if configured and not Path(configured).exists():
        return [
            checks.Warning(
                f"CHROMIUM_PATH={configured} does not exist",
                hint="Point it at a Chromium binary, or unset it to use Playwright's own "
                "Chromium or the system's. Browser tool calls fail until then.",
                id="tools_app.W003",
            )
        ]
    return []


def register_all() -> None:
    checks.register(sandbox_reachable, "sandbox", deploy=True)
    checks.register(chromium_path_exists, "browser")
