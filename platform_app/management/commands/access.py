"""``manage.py access export [file]`` / ``manage.py access import file``: groups, members,
grants and approval modes as YAML, so a team can keep who may use what in git."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from platform_app.people.access import AccessImportError, access_export, access_import


class Command(BaseCommand):
    help = "Import or export groups, members, grants and approval modes as YAML."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("action", choices=["import", "export"])
        parser.add_argument("path", nargs="?", help="YAML file ('-' or nothing: stdin/stdout)")

    def handle(self, *args: Any, action: str, path: str | None, **options: Any) -> None:
        if action == "export":
            text = access_export()
            if path and path != "-":
                Path(path).write_text(text)
                self.stdout.write(f"wrote {path}")
            else:
                self.stdout.write(text, ending="")
            return
        source = sys.stdin.read() if not path or path == "-" else Path(path).read_text()
        try:
            summary = access_import(source)
        except AccessImportError as exc:
            raise CommandError(f"{path or 'stdin'}: {exc}; nothing was imported") from exc
        self.stdout.write(
            f"imported {len(summary.groups)} group(s) and {len(summary.approvals)} approval "
            f"setting(s): {', '.join(summary.groups + summary.approvals) or 'nothing'}"
        )
