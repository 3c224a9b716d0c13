"""Embed archival memory with the Memory group's current embedder: chunks saved while no
embedder worked (or under another one) become findable by meaning. Idempotent. The workers
do the same in the background (``platform_app.tasks.memory_backfill``); this command does it
now, and ``--all`` re-embeds everything."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from platform_app.memory.embedders import embedder_for
from platform_app.memory.services import chunks_embed, chunks_to_embed
from platform_app.models import MemoryChunk
from tools_app import selectors
from tools_app.errors import ToolError

BATCH = 64


class Command(BaseCommand):
    help = "Embed memory chunks that have no vector from the configured embedder."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", help="Only this username's memory.")
        parser.add_argument("--all", action="store_true", help="Re-embed every chunk.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            embedder = embedder_for(selectors.group_settings("memory"))
        except ToolError as exc:
            raise CommandError(str(exc)) from None
        if embedder is None:
            raise CommandError(
                "no embedder is configured: set Memory → embedder in the Tools Manager"
            )
        chunks = MemoryChunk.objects.all() if options["all"] else chunks_to_embed(embedder.id)
        if options["user"]:
            chunks = chunks.filter(user__username=options["user"])
        ids = list(chunks.order_by("id").values_list("id", flat=True))
        done = 0
        for start in range(0, len(ids), BATCH):
            batch = list(MemoryChunk.objects.filter(pk__in=ids[start : start + BATCH]))
            try:
                chunks_embed(batch, embedder)
            except ToolError as exc:
                raise CommandError(f"after {done} chunks: {exc}") from None
            done += len(batch)
            self.stdout.write(f"{done}/{len(ids)} chunks embedded with {embedder.id}")
        self.stdout.write(self.style.SUCCESS(f"done: {done} chunk(s) embedded"))
