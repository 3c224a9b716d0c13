from __future__ import annotations

from typing import Any, Literal
from urllib.parse import urlsplit

from django.utils.translation import gettext as _
from pydantic import Field, SecretStr, field_validator

from tools_app.registry import GroupSettings, ToolGroup, register_group

# The schemas' hard caps, as seed 004 has them (web_search: 1-10 results; extract_page_content:
# 1-5 URLs); the admin's settings may only lower them.
MAX_URLS = 5
MAX_RESULTS = 10


class ResearchSettings(GroupSettings):
    timeout_seconds: int = Field(
        60, ge=1, le=600, description="Longest a call may run, all pages together (s)."
    )
    search_backend: Literal["none", "searxng", "tavily"] = Field(
        "none",
        description="Where web_search asks: none (web_search fails with a clear error), "
        "searxng (a SearXNG instance's JSON API) or tavily (a Tavily-compatible API).",
    )
    search_url: str = Field(
        "",
        max_length=200,
        description="Base URL of the search backend, e.g. https://searx.example.org "
        "(SearXNG: /search?format=json is added) or https://api.tavily.com (POST /search).",
    )
    search_api_key: SecretStr = Field(
        SecretStr(""),
        description="API key of a Tavily-compatible backend (unused by SearXNG).",
    )
    search_private_allowed: list[str] = Field(
        default_factory=list,
        description="A search backend on a private or loopback address (e.g. a SearXNG in the "
        "same network) must be named here: its host, IP or CIDR, one per line.",
    )
    max_results: int = Field(
        10, ge=1, le=MAX_RESULTS, description="Most results one web_search returns."
    )
    search_timeout_seconds: int = Field(
        20, ge=1, le=120, description="Longest the search backend may take to answer (s)."
    )
    max_urls: int = Field(
        5, ge=1, le=MAX_URLS, description="Most URLs one extract_page_content call may read."
    )
    max_chars_per_page: int = Field(
        10_000, ge=500, le=500_000, description="Text kept per page (characters)."
    )
    page_timeout_seconds: int = Field(
        20, ge=1, le=120, description="Longest one page may take to download (s)."
    )

    @field_validator("max_results", "max_urls", mode="before")
    @classmethod
    def _at_most_the_schema(cls, value: Any, info: Any) -> Any:
        # Settings saved when the caps were higher (50 results, 20 URLs) stay valid: the
        # schema's cap is what a call can ask for anyway.
        cap = MAX_RESULTS if info.field_name == "max_results" else MAX_URLS
        try:
            return min(int(value), cap)
        except (TypeError, ValueError):
            return value

    @field_validator("search_url")
    @classmethod
    def _url(cls, value: str) -> str:
        value = value.strip()
        if value:
            parts = urlsplit(value)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError("give an http:// or https:// URL")
            if parts.username or parts.password:
                raise ValueError("no credentials in the URL; use the API key field")
        return value

    @field_validator("search_private_allowed")
    @classmethod
    def _entries(cls, value: list[str]) -> list[str]:
        return [v.strip().lower() for v in value if v.strip()]


def research_status(settings: Any) -> tuple[str, str, str]:
    """For the Tools Manager: which search backend web_search uses."""
    if settings.search_backend == "none":
        return "bad", "no search backend", "web_search fails until an admin configures one"
    if not settings.search_url:
        return "bad", settings.search_backend, "no search URL configured"
    host = urlsplit(settings.search_url).hostname or "?"
    label = "SearXNG" if settings.search_backend == "searxng" else "Tavily-compatible"
    if settings.search_backend == "tavily" and not settings.search_api_key.get_secret_value():
        return "bad", f"{label}: {host}", "no API key stored"
    return "ok", f"{label}: {host}", f"web_search asks {settings.search_url}"


GROUP = register_group(
    ToolGroup(
        name="research",
        untrusted_source="search results and web pages",
        label=_("Research"),
        description="Web search through an admin-configured backend (SearXNG or "
        "Tavily-compatible) and page reading as clean text, behind the SSRF guard.",
        settings_model=ResearchSettings,
        limits=("search_backend", "max_results", "max_urls", "max_chars_per_page"),
        order=45,
        status=research_status,
    )
)
