from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from tools_app.errors import PolicyDenied
from tools_app.executors.research.settings import MAX_RESULTS, MAX_URLS, ResearchSettings
from tools_app.registry import BaseTool
from tools_app.runtime import BindContext


def _reasoning_first_and_required(schema: dict[str, Any]) -> None:
    # Seed 004: the model says why before it searches or reads. Shown to the model as a
    # required field; a person's slash command may leave it out (it defaults to "").
    required = [name for name in schema.get("required", []) if name != "reasoning"]
    schema["required"] = ["reasoning", *required]


REASONING = Field(
    "",
    max_length=1000,
    description="Why this is needed and what you expect to find.",
    examples=["I need the current figure from an official source."],
)


class WebSearch(BaseTool[ResearchSettings], group="research"):  # name: "web_search"
    """Search the web. Returns a list of results, each with its source number, title, url
    and snippet; the numbers stay the same for the whole turn (cite them as [1] [2]). Read a
    result's page with extract_page_content when the snippet is not enough. Snippets often
    hold the direct answer: read them carefully. For dates and numbers, put the year or
    period in the query."""

    model_config = ConfigDict(json_schema_extra=_reasoning_first_and_required)

    reasoning: str = REASONING
    query: str = Field(
        min_length=1,
        max_length=400,
        description="The search query, in the same language as the user's request.",
        examples=["SearXNG JSON API"],
    )
    max_results: int = Field(
        5, ge=1, le=MAX_RESULTS, description="How many results to return, 1-10."
    )

    def check_policy(self, settings: ResearchSettings, ctx: BindContext) -> None:
        if not self.query.strip():
            raise PolicyDenied("the query is blank")


# name: "extract_page_content"
class ExtractPageContent(BaseTool[ResearchSettings], group="research"):
    """Download web pages and return their main text (navigation, scripts and styles
    removed), each with its source number (the same number web_search gave it, or a new
    one). Each URL gets its own result: one page failing does not fail the others. A page
    may show figures for other years or periods than asked: check its time matches the
    question. When a page contradicts the search snippet on a fact, prefer the snippet."""

    model_config = ConfigDict(json_schema_extra=_reasoning_first_and_required)

    reasoning: str = REASONING
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
