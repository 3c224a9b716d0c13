"""Write tools_app/tool_strings.py: the built-in tools' words, for makemessages."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from tools_app.catalog import CATALOG_PATH, catalog_source


class Command(BaseCommand):
    help = "Write the tools' descriptions into tools_app/tool_strings.py for makemessages."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--check", action="store_true", help="Fail when the file is not up to date."
        )

    def handle(self, *args: Any, check: bool = False, **options: Any) -> None:
        source = catalog_source()
        current = CATALOG_PATH.read_text() if CATALOG_PATH.exists() else ""
        if check:
            if current != source:
                raise CommandError(
                    f"{CATALOG_PATH} is out of date: run `manage.py tool_catalog`, then "
                    "makemessages and translate (docs/TRANSLATING.md)"
                )
            self.stdout.write("tool catalog up to date")
            return
        CATALOG_PATH.parent.mkdir(parents=True, exist_ok=True)
        CATALOG_PATH.write_text(source)
        self.stdout.write(f"wrote {CATALOG_PATH}")
