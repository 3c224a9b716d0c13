from __future__ import annotations

from pydantic import Field

from tools_app.errors import PolicyDenied
from tools_app.executors.research.settings import MAX_RESULTS, MAX_URLS, ResearchSettings
from tools_app.registry import BaseTool
from tools_app.runtime import BindContext


class WebSearch(BaseTool[ResearchSettings], group="research"):  # name: "web_search"
    """Search the web. Returns a list of results, each with title, url and snippet; read a
    result's page with extract_page_content when the snippet is not enough."""

    query: str = Field(
        min_length=1,
        max_length=400,
        description="What to search for, as you would type it into a search engine.",
        examples=["SearXNG JSON API"],
    )
    max_results: int = Field(
        5, ge=1, le=MAX_RESULTS, description="How many results to return (capped by the admin)."
    )

    def check_policy(self, settings: ResearchSettings, ctx: BindContext) -> None:
        if not self.query.strip():
            raise PolicyDenied("the query is blank")


# name: "extract_page_content"
class ExtractPageContent(BaseTool[ResearchSettings], group="research"):
    """Download web pages and return their main text (navigation, scripts and styles
    removed). Each URL gets its own result: one page failing does not fail the others."""

    urls: list[str] = Field(
        min_length=1,
        max_length=MAX_URLS,
        description="http:// or https:// URLs of the pages to read.",
        examples=[["https://example.com/"]],
    )

    def check_policy(self, settings: ResearchSettings, ctx: BindContext) -> None:
        if len(self.urls) > settings.max_urls:
            raise PolicyDenied(
                f"{len(self.urls)} URLs given; at most {settings.max_urls} pages may be read "
                "per call (split them over several calls)"
            )
