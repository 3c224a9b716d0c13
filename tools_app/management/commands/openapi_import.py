"""Import an OpenAPI 3.0/3.1 document as a tool group.

manage.py openapi_import NAME SPEC_URL_OR_FILE [--operations id,id] [--list]
    [--document-private] [--api-private] [--base-url URL] [--auth api_key|bearer|basic]
    [--auth-in header|query] [--auth-name X-API-Key] [--username U] [--secret-env VAR]
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools_app.services.sources import SourceError


class Command(BaseCommand):
    help = "Import an OpenAPI document: each operation becomes a governed function."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("spec", help="the document's URL or a local file (JSON or YAML)")
        parser.add_argument("--operations", default="", help="comma-separated operation names")
        parser.add_argument("--list", action="store_true", help="preview only, import nothing")
        parser.add_argument("--label", default="")
        parser.add_argument(
            "--document-private", action="store_true", help="the document's host is private"
        )
        parser.add_argument(
            "--api-private", action="store_true", help="the API's (base URL's) host is private"
        )
        parser.add_argument(
            "--allow-private", action="store_true", help="both of the above (older spelling)"
        )
        parser.add_argument("--base-url", default="")
        parser.add_argument(
            "--auth", choices=["none", "api_key", "bearer", "basic", "oauth2"], default="none"
        )
        parser.add_argument("--auth-in", choices=["header", "query"], default="header")
        parser.add_argument("--auth-name", default="X-API-Key")
        parser.add_argument("--username", default="")
        parser.add_argument("--secret-env", metavar="VAR", help="read the key/token from $VAR")

    def handle(self, *args: Any, **options: Any) -> None:
        from tools_app.executors.openapi.importer import (
            openapi_fetch,
            openapi_import,
            openapi_preview,
        )

        spec: str = options["spec"]
        document_private = options["document_private"] or options["allow_private"]
        api_private = options["api_private"] or options["allow_private"]
        try:
            if spec.startswith(("http://", "https://")):
                text, url = openapi_fetch(spec, document_private=document_private), spec
            else:
                path = Path(spec)
                if not path.is_file():
                    raise CommandError(f"{spec}: no such file")
                text, url = path.read_text(encoding="utf-8"), ""
            if options["list"]:
                preview = openapi_preview(text, document_url=url)
                self.stdout.write(
                    f"{preview.title} (OpenAPI {preview.version}) at {preview.base_url or '?'}"
                )
                for op in preview.operations:
                    note = f"  [cannot import: {op.skipped}]" if op.skipped else ""
                    self.stdout.write(f"  {op.name}\t{op.method.upper()} {op.path}{note}")
                return
            secret = ""
            if options["secret_env"]:
                secret = os.environ.get(options["secret_env"], "")
                if not secret:
                    raise CommandError(f"${options['secret_env']} is empty")
            selected = [s.strip() for s in options["operations"].split(",") if s.strip()]
            source = openapi_import(
                name=options["name"],
                text=text,
                document_url=url,
                label=options["label"],
                selected=selected or None,
                auth={
                    "type": options["auth"],
                    "in": options["auth_in"],
                    "name": options["auth_name"],
                    "username": options["username"],
                },
                secret=secret,
                api_private=api_private,
                base=options["base_url"],
            )
        except SourceError as exc:
            raise CommandError(str(exc)) from None
        names = ", ".join(f["name"] for f in source.functions)
        self.stdout.write(
            f"imported {source.tool_count} operation(s) into {source.group_name}: {names}"
        )
