"""The sources of a turn: every page the research tools found or read, numbered once."""

from __future__ import annotations

from django.db import models


class ResearchSource(models.Model):
    """One source of one turn (seed 004's ``context.sources``): ``web_search`` and
    ``extract_page_content`` register each URL once and return its ``number``, the same for
    the whole turn, so the model cites [1] [2] and ``create_report`` lists exactly those."""

    turn = models.ForeignKey(
        "chat_app.Turn", on_delete=models.CASCADE, related_name="research_sources"
    )
    number = models.PositiveIntegerField()
    url = models.TextField()
    # SHA-256 of the URL: what makes it unique per turn (a URL can be longer than an index
    # entry may be).
    url_hash = models.CharField(max_length=64)
    title = models.CharField(max_length=500, blank=True)
    snippet = models.TextField(blank=True)
    # extract_page_content read the page (not only a search result pointing at it).
    read = models.BooleanField(default=False)
    first_call = models.ForeignKey(
        "tools_app.ToolCall", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["turn_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["turn", "number"], name="research_source_number"),
            models.UniqueConstraint(fields=["turn", "url_hash"], name="research_source_url"),
        ]

    def __str__(self) -> str:
        return f"[{self.number}] {self.url}"

    def as_dict(self) -> dict[str, object]:
        return {"number": self.number, "title": self.title, "url": self.url}
