"""``manage.py conversations import --user NAME [--format auto] FILE``: bring a person's
history from Open WebUI, ChatGPT or LibreChat (or a Control Center export) into their
account. The operator's command: it may name any active account; the import is audited
as the operator's."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from chat_app.services.history_import import (
    FORMATS,
    MAX_IMPORT_BYTES,
    HistoryImportError,
    history_import,
)


class Command(BaseCommand):
    help = "Import conversations exported from Open WebUI, ChatGPT or LibreChat."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("action", choices=["import"])
        parser.add_argument("path", help="the export file ('-': stdin)")
        parser.add_argument("--user", required=True, help="the account to import into")
        parser.add_argument("--format", default="auto", choices=FORMATS)

    def handle(self, *args: Any, path: str, user: str, format: str, **options: Any) -> None:
        owner = get_user_model().objects.filter(username=user, is_active=True).first()
        if owner is None:
            raise CommandError(f"no active account named {user!r}")
        if path == "-":
            raw = sys.stdin.buffer.read(MAX_IMPORT_BYTES + 1)
        else:
            try:
                with Path(path).open("rb") as handle:
                    raw = handle.read(MAX_IMPORT_BYTES + 1)
            except OSError as exc:
                raise CommandError(f"cannot read {path}: {exc.strerror}") from None
        try:
            summary = history_import(owner=owner, raw=raw, fmt=format, actor=None, via="command")
        except HistoryImportError as exc:
            raise CommandError(f"not imported: {exc}") from None
        line = (
            f"{summary.format}: {len(summary.conversations)} conversation(s), "
            f"{summary.messages} message(s) imported into {owner.get_username()}"
        )
        skipped = [
            f"{n} conversation(s): {why}" for why, n in summary.skipped_conversations.items()
        ]
        skipped += [f"{n} message(s): {why}" for why, n in summary.skipped_messages.items()]
        if skipped:
            line += "; skipped " + ", ".join(skipped)
        self.stdout.write(line)
