"""``manage.py tools``: the tool registry from the command line.

- ``tools schemas [--write FILE] [--check]``: every built-in tool's schema as JSON
  (``tools_app.schemas_file``); ``--check`` fails when the checked-in file is stale.
- ``tools define FILE``: define tools from a JSON Schema (JSON or YAML; seed 001), latent or
  bound to an existing tool (``tools_app.executors.defined.services``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools_app.executors.defined.services import DefinitionError, tools_define
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

        define = sub.add_parser("define", help="Define tools from a JSON Schema file.")
        define.add_argument("file", help="The definition (JSON or YAML); - for stdin.")

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

    def _define(self, *, file: str, **_: Any) -> None:
        import sys

        text = sys.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
        try:
            source, created = tools_define(text, user=None)
        except DefinitionError as exc:
            raise CommandError(f"{file}: {exc}") from None
        names = ", ".join(f["name"] for f in source.functions)
        verb = "defined" if created else "redefined"
        self.stdout.write(
            f"{verb} {len(source.functions)} tool(s) in {source.group_name}: {names} "
            "(grant the source to groups in Grants; admins may use it now)"
        )
