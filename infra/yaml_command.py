"""The shape of ``manage.py <name> export [file]`` / ``manage.py <name> import [file]``: YAML to
a file or stdout, from a file or stdin. A command says what to export and how to import."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand


class YamlFileCommand(BaseCommand):
    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("action", choices=["import", "export"])
        parser.add_argument("path", nargs="?", help="YAML file ('-' or nothing: stdin/stdout)")

    def export_text(self) -> str:
        raise NotImplementedError

    def import_text(self, source: str, path: str | None) -> str:
        """Import ``source`` (read from ``path``, None: stdin); the line to print. Raises
        CommandError with the reason when nothing was imported."""
        raise NotImplementedError

    def handle(self, *args: Any, action: str, path: str | None, **options: Any) -> None:
        if action == "export":
            text = self.export_text()
            if path and path != "-":
                Path(path).write_text(text)
                self.stdout.write(f"wrote {path}")
            else:
                self.stdout.write(text, ending="")
            return
        source = sys.stdin.read() if not path or path == "-" else Path(path).read_text()
        self.stdout.write(self.import_text(source, path))
