"""Per-user state of the platform tools.

Full-text indexes are not Django fields: on SQLite an FTS5 table kept in step by triggers, on
PostgreSQL a GIN index on ``to_tsvector('english', content)``; both are made by migration 0001
(``memory/fulltext.py`` says why). On SQLite, Django rebuilds a table to alter it, which drops
its triggers: a later migration that alters ``MemoryChunk`` must create them again
(``fulltext.install``), and ``tests/tools/memory`` fails if it does not.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class MemoryChunk(models.Model):
    """One indexed piece of archival memory. A long ``memory_save`` becomes several chunks
    sharing a ``document`` id, in ``position`` order."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memory_chunks"
    )
    content = models.TextField()
    source = models.CharField(max_length=200, default="manual")
    document = models.CharField(max_length=32, blank=True, db_index=True)
    position = models.PositiveIntegerField(default=0)
    # Which embedder made ``embedding`` ("local:all-MiniLM-L6-v2", "provider:<name>:<model>");
    # vectors are compared only with vectors of the same embedder.
    embedder = models.CharField(max_length=200, blank=True)
    # float32, little-endian, unit length: portable across databases (see memory/vectors.py).
    embedding = models.BinaryField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        # Also what the vector cache's freshness check reads (count, newest change) without
        # touching the table: see memory/vectors.py.
        indexes = [models.Index(fields=["user", "embedder", "updated_at"])]

    def __str__(self) -> str:
        return f"{self.user_id}: {self.content[:60]}"


class CoreMemoryEntry(models.Model):
    """Core memory: a few key/value facts always in the system prompt."""

    class Section(models.TextChoices):
        USER = "user", "about the user"
        AGENT = "agent", "about the agent"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="core_memory"
    )
    section = models.CharField(max_length=8, choices=Section.choices)
    key = models.CharField(max_length=100)
    value = models.TextField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["user", "section", "key"]
        constraints = [
            models.UniqueConstraint(fields=["user", "section", "key"], name="core_memory_unique")
        ]
        verbose_name = "core memory entry"
        verbose_name_plural = "core memory"

    def __str__(self) -> str:
        return f"{self.section}.{self.key}"
