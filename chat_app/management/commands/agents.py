"""``manage.py agents export [file]`` / ``manage.py agents import file``: agent profiles as YAML,
so a team can keep them in git."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from chat_app.services.agents import AgentImportError, agents_export, agents_import


class Command(BaseCommand):
    help = "Import or export agent profiles as YAML."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("action", choices=["import", "export"])
        parser.add_argument("path", nargs="?", help="YAML file ('-' or nothing: stdin/stdout)")

    def handle(self, *args: Any, action: str, path: str | None, **options: Any) -> None:
        if action == "export":
            text = agents_export()
            if path and path != "-":
                Path(path).write_text(text)
                self.stdout.write(f"wrote {path}")
            else:
                self.stdout.write(text, ending="")
            return
        source = sys.stdin.read() if not path or path == "-" else Path(path).read_text()
        try:
            saved = agents_import(source)
        except AgentImportError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"imported {len(saved)} agent(s): {', '.join(a.name for a in saved)}")
