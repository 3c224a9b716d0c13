"""Embed archival memory with the Memory group's current embedder: chunks saved while no
embedder worked (or under another one) become findable by meaning. Idempotent."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Q
from django.utils import timezone

from platform_app.memory import vectors
from platform_app.memory.embedders import embedder_for
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
        chunks = MemoryChunk.objects.order_by("id")
        if options["user"]:
            chunks = chunks.filter(user__username=options["user"])
        if not options["all"]:
            chunks = chunks.filter(~Q(embedder=embedder.id) | Q(embedding=None))
        ids = list(chunks.values_list("id", flat=True))
        done = 0
        for start in range(0, len(ids), BATCH):
            batch = list(MemoryChunk.objects.filter(pk__in=ids[start : start + BATCH]))
            try:
                matrix = embedder.embed([c.content for c in batch])
            except ToolError as exc:
                raise CommandError(f"after {done} chunks: {exc}") from None
            for chunk, vector in zip(batch, matrix, strict=True):
                MemoryChunk.objects.filter(pk=chunk.pk).update(
                    embedder=embedder.id,
                    embedding=vectors.to_bytes(vector),
                    updated_at=timezone.now(),
                )
            done += len(batch)
            self.stdout.write(f"{done}/{len(ids)} chunks embedded with {embedder.id}")
        self.stdout.write(self.style.SUCCESS(f"done: {done} chunk(s) embedded"))
