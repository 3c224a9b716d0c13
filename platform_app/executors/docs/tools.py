from __future__ import annotations

from pydantic import Field

from platform_app import safe_files
from platform_app.executors.docs.settings import DocsSettings
from tools_app.errors import PolicyDenied
from tools_app.registry import BaseTool
from tools_app.runtime import BindContext


class DocsList(BaseTool[DocsSettings], group="docs"):
    """List the documentation files you can read (path, title, size)."""


class DocsSearch(BaseTool[DocsSettings], group="docs"):
    """Search the documentation by words and by meaning; returns matching sections
    (path#heading) with a snippet. Read one with docs_read."""

    query: str = Field(min_length=1, description="Words to look for.", examples=["approval"])
    top_k: int = Field(5, ge=1, le=100, description="How many sections at most.")

    def check_policy(self, settings: DocsSettings, ctx: BindContext) -> None:
        if self.top_k > settings.max_top_k:
            raise PolicyDenied(f"top_k is at most {settings.max_top_k}")


class DocsRead(BaseTool[DocsSettings], group="docs"):
    """Read a documentation file by the path docs_list or docs_search gave, e.g.
    docs/USER_TOOLS_GUIDE.md; add #Heading to read only that section."""

    path: str = Field(
        min_length=1,
        max_length=1200,
        description="folder/file path, optionally with #Heading.",
        examples=["docs/USER_TOOLS_GUIDE.md#Slash commands (no LLM needed)"],
    )

    def check_policy(self, settings: DocsSettings, ctx: BindContext) -> None:
        _, _, inside = self.path.partition("#")[0].strip().partition("/")
        try:
            safe_files.split_relative(inside)
        except safe_files.Refused as exc:
            raise PolicyDenied(str(exc)) from None
