"""``python -m tests.oidc_provider.serve`` with IDP_DIR set: migrate, register the clients of
config.json, serve on 127.0.0.1:<config port> until terminated."""

from __future__ import annotations

import os
import socketserver
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server


class _Server(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Handler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        print(format % args, flush=True)


def main() -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.oidc_provider.settings"
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application
    from oauth2_provider.models import Application

    call_command("migrate", verbosity=0)
    for client in settings.CONFIG["clients"]:
        Application.objects.update_or_create(
            client_id=client["client_id"],
            defaults={
                "name": client["client_id"],
                "client_secret": client["client_secret"],
                "client_type": Application.CLIENT_CONFIDENTIAL,
                "authorization_grant_type": Application.GRANT_AUTHORIZATION_CODE,
                "redirect_uris": " ".join(client["redirect_uris"]),
                "algorithm": Application.RS256_ALGORITHM,
                "skip_authorization": True,
            },
        )
    server = make_server(
        "127.0.0.1",
        settings.CONFIG["port"],
        get_wsgi_application(),
        server_class=_Server,
        handler_class=_Handler,
    )
    print(f"test OIDC provider at {settings.CONFIG['issuer']}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
