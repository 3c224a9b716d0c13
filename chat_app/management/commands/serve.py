"""Start the app: Daphne (HTTP + websockets) and, in embedded mode, the in-process worker."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = (
        "Serve Control Center (ASGI). Embedded mode also runs the Celery worker and the agent "
        "runner in-process."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default=settings.HOST)
        parser.add_argument("--port", type=int, default=settings.PORT)
        parser.add_argument(
            "--no-worker", action="store_true", help="Do not start the worker (nor beat)."
        )
        parser.add_argument(
            "--no-beat",
            action="store_true",
            help="Do not start the in-process beat (schedules then fire only where one runs).",
        )

    def handle(
        self, *args: Any, host: str, port: int, no_worker: bool, no_beat: bool, **options: Any
    ) -> None:
        from channels.layers import get_channel_layer
        from channels.routing import get_default_application
        from daphne.endpoints import build_endpoint_description_strings

        from chat_app.services.providers import provider_seed_from_env
        from infra.body_limit import CappedServer
        from infra.gc_tuning import heap_settle
        from infra.maintenance import start_maintenance_thread
        from infra.malloc import malloc_arenas_limit
        from infra.observability import observability_start

        if settings.SERVE_MALLOC_ARENAS:
            # Before any thread starts: its arenas are the ones that fragment.
            malloc_arenas_limit(settings.SERVE_MALLOC_ARENAS)
        # The channel layer is built here, before any thread of ours publishes: Channels'
        # registry builds it on first use without a lock, and a second one built by a racing
        # thread would take events no socket listens to.
        get_channel_layer()
        observability_start("web")  # its metrics: /metrics; traces if OTEL_* say so
        if settings.DATABASES["default"].get("CONN_MAX_AGE") is None:
            from django.core.signals import request_finished

            from infra.request_threads import close_request_connections

            # Persistent connections suit the runner's long-lived threads, not a request's.
            request_finished.connect(close_request_connections, dispatch_uid="cc-request-db")
        if settings.MODE == "distributed":
            from chat_app.services.process_beats import process_join

            process_join("web")  # its heartbeat and markers: /healthz/ready compares them
        provider_seed_from_env()
        if settings.MODE == "embedded" and not no_worker:
            from chat_app.embedded import start_embedded_worker

            start_embedded_worker()
            if not no_beat:
                from chat_app.embedded import start_embedded_beat

                start_embedded_beat()  # schedules: beat sends ticks to the in-process worker
        # Every process looks for lost work; the web process too, so a turn whose runner or
        # worker died ends even when none is left to notice.
        start_maintenance_thread()
        self.stdout.write(
            f"Control Center ({settings.MODE} mode) on http://{host}:{port}/", ending="\n"
        )
        self.stdout.flush()
        # A deep listen queue and a patient handshake: after a restart every open page
        # reconnects at once, and hundreds of sockets must not be refused for arriving together.
        endpoints = [
            f"{e}:backlog={settings.WEB_LISTEN_BACKLOG}"
            for e in build_endpoint_description_strings(host=host, port=port)
        ]
        # Request bodies over MAX_REQUEST_BODY_BYTES are refused while they arrive.
        server = CappedServer(
            application=get_default_application(),
            endpoints=endpoints,
            verbosity=0,
            application_close_timeout=5,
            websocket_handshake_timeout=30,
            websocket_max_message_size=settings.WEBSOCKET_MAX_FRAME_BYTES,
            websocket_max_frame_size=settings.WEBSOCKET_MAX_FRAME_BYTES,
        )
        # Start-up is done: what it built leaves the collector's full walks (infra.gc_tuning).
        heap_settle()
        try:
            server.run()  # until SIGTERM or SIGINT
        finally:
            if settings.MODE == "distributed":
                from chat_app.services.process_beats import process_leave

                # Now, while the database pool is certainly open, not at interpreter exit:
                # the others stop counting this process at once.
                process_leave()
            # The in-process worker's warm sandbox containers must not outlive the app.
            from tools_app.sandbox import shutdown_sandboxes

            shutdown_sandboxes()
