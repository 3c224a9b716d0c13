"""``manage.py health --kind runner|worker|browser-worker|beat [--live]``: a container's health
check.

``--live`` (a liveness probe): a process of that kind in this container turned its work loop
within ``LIVENESS_SECONDS`` (``infra.liveness``); nothing else is read, so a database or broker
outage restarts nothing. Without it (readiness, compose's health check):

Exits 0 when a process of that kind on this host reported itself lately (it writes its
heartbeat to the database itself, so one that cannot reach the database is not healthy), and
this host reaches the database and the broker with the fleet's keys and shared directories;
1 otherwise. Prints one line of JSON either way (the reasons when not healthy). The web
process answers ``/healthz/ready`` instead.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from chat_app.readiness import ROLES, readiness
from infra import liveness

LIVE_KEYS = {"runner": "runner", "worker": "worker:tools", "browser-worker": "worker:browser",
             "beat": "beat"}  # fmt: skip


def _live(kind: str) -> dict[str, Any]:
    within = settings.LIVENESS_SECONDS
    pids = liveness.fresh(LIVE_KEYS[kind], within)
    if pids:
        return {"ok": True, "kind": kind, "live": True, "pids": pids, "reasons": []}
    reason = f"no {kind} process here turned its loop in {within:g} s"
    return {"ok": False, "kind": kind, "live": False, "reasons": [reason]}


class Command(BaseCommand):
    help = "Health check of a runner, worker, browser worker or beat on this host (exit 0 or 1)."
    requires_system_checks: list[str] = []  # a probe runs often: answer, nothing more

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--kind", required=True, choices=sorted(ROLES))
        parser.add_argument(
            "--live",
            action="store_true",
            help="liveness only: a process of that kind here is turning (no database)",
        )

    def handle(self, *args: Any, kind: str, live: bool = False, **options: Any) -> None:
        report: dict[str, Any]
        if live:
            report = _live(kind)
        elif settings.MODE != "distributed":
            report = {
                "ok": False,
                "kind": kind,
                "reasons": [
                    "embedded mode runs every kind inside the web process: probe its "
                    "/healthz/ready instead"
                ],
            }
        else:
            report = readiness(kind)
        self.stdout.write(json.dumps(report, separators=(",", ":"), default=str))
        self.stdout.flush()
        sys.stderr.flush()
        # Now, not after the interpreter's shutdown: a check still waiting on a database that
        # does not answer (and its pool's retries) would hold the probe past its answer.
        os._exit(0 if report["ok"] else 1)
