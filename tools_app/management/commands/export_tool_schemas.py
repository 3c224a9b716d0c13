"""``manage.py export_tool_schemas``: the enabled tools in OpenAI format, as the API serves them."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from tools_app.manager.selectors import enabled_tool_schemas


class Command(BaseCommand):
    help = "Print the enabled tools' schemas in OpenAI `tools` format (JSON)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--strict",
            action=argparse.BooleanOptionalAction,
            default=True,
            help="OpenAI strict mode schemas (default) or plain JSON Schema (--no-strict).",
        )
        parser.add_argument("-o", "--output", help="Write to this file instead of stdout.")

    def handle(self, *args: Any, **options: Any) -> None:
        text = json.dumps(enabled_tool_schemas(strict=options["strict"]), indent=2) + "\n"
        if options["output"]:
            Path(options["output"]).write_text(text, encoding="utf-8")
        else:
            self.stdout.write(text, ending="")
