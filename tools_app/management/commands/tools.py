"""``manage.py tools``: the tool registry from the command line.

- ``tools schemas [--write FILE] [--check]``: every built-in tool's schema as JSON
  (``tools_app.schemas_file``); ``--check`` fails when the checked-in file is stale.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools_app.schemas_file import COMMAND, SCHEMAS_PATH, schemas_stale, schemas_text


class Command(BaseCommand):
    help = "The tool registry: write or check the schemas file."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        schemas = sub.add_parser("schemas", help="Every built-in tool's schema as JSON.")
        schemas.add_argument("--write", metavar="FILE", help="Write to FILE (else stdout).")
        schemas.add_argument(
            "--check",
            action="store_true",
            help=f"Fail when {SCHEMAS_PATH.name} (or --write's FILE) is not up to date.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        getattr(self, f"_{options['action']}")(**options)

    def _schemas(self, *, write: str | None = None, check: bool = False, **_: Any) -> None:
        path = Path(write) if write else SCHEMAS_PATH
        if check:
            if schemas_stale(path):
                raise CommandError(f"{path} is out of date: run `{COMMAND}` and commit it")
            self.stdout.write(f"{path.name} up to date")
            return
        text = schemas_text()
        if write:
            path.write_text(text, encoding="utf-8")
            self.stdout.write(f"wrote {path}")
        else:
            self.stdout.write(text, ending="")
