"""Run the agent runner (distributed mode): model rounds from the ``agent`` queue, streamed
on one event loop. Run one or more next to the web process and the tool workers."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Stream model rounds from the agent queue on an asyncio loop (distributed mode)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--name", default="", help="Shown in /healthz and on turns.")
        parser.add_argument(
            "--check",
            action="store_true",
            help="Health check: exit 0 if a runner on this host reported itself alive in the "
            "last AGENT_HEARTBEAT_TIMEOUT seconds, 1 otherwise (for container health checks).",
        )
        parser.add_argument(
            "--capacity",
            type=int,
            default=0,
            help="Rounds in flight at once (default AGENT_RUNNER_CAPACITY).",
        )

    def handle(self, *args: Any, name: str, capacity: int, check: bool, **options: Any) -> None:
        if check:
            self._check(name)
            return
        if settings.MODE != "distributed":
            raise CommandError(
                "the agent runner runs as its own process only in distributed mode (set "
                "REDIS_URL); in embedded mode `manage.py serve` runs it in-process"
            )
        from chat_app.runner import AgentRunner
        from chat_app.services.process_beats import process_join
        from infra.gc_tuning import heap_settle
        from infra.observability import observability_start

        observability_start("runner")  # METRICS_PORT, OTEL_*
        runner = AgentRunner(name=name or None, capacity=capacity or None)
        process_join("runner", name=runner.name)  # `manage.py health --kind runner` reads it
        self.stdout.write(f"agent runner {runner.name} (capacity {runner.capacity})")
        self.stdout.flush()
        heap_settle()
        runner.run_forever()

    def _check(self, name: str) -> None:
        import socket
        import sys

        from chat_app.services.runner_beats import runners_alive

        prefix = name or f"agent@{socket.gethostname()}:"
        alive = [r for r in runners_alive() if r.name.startswith(prefix)]
        if not alive:
            self.stderr.write(f"no agent runner {prefix}* reported itself recently")
            sys.exit(1)
        for runner in alive:
            self.stdout.write(f"{runner.name}: {runner.in_flight} of {runner.capacity} rounds")
