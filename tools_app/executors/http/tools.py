from __future__ import annotations

from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, model_validator

from tools_app.executors.http.settings import HttpSettings
from tools_app.netguard import check_url
from tools_app.registry import BaseTool
from tools_app.runtime import BindContext

Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]


class HttpRequest(BaseTool[HttpSettings], group="http", slash="http"):
    """Send an HTTP request and return the status, headers and body text."""

    method: Method = Field("GET", description="HTTP method.")
    url: str = Field(description="http:// or https:// URL.", examples=["https://example.com/"])
    headers: dict[str, str] | None = Field(None, description="Extra request headers.")
    body: str | None = Field(None, description="Raw request body.")
    json_body: Any | None = Field(None, alias="json", description="A JSON request body.")
    timeout: int | None = Field(None, ge=1, description="Seconds (capped by the admin).")

    model_config = {"populate_by_name": True, "extra": "forbid"}

    @model_validator(mode="after")
    def _one_body(self) -> HttpRequest:
        if self.body is not None and self.json_body is not None:
            raise ValueError("give either body or json, not both")
        return self

    @classmethod
    def from_shorthand(cls, text: str) -> dict[str, Any]:
        parts = text.split(None, 1)
        if len(parts) == 2 and parts[0].upper() in Method.__args__:  # type: ignore[attr-defined]
            return {"method": parts[0].upper(), "url": parts[1].strip()}
        if len(parts) == 1:
            return {"method": "GET", "url": parts[0]}
        raise ValueError("usage: /http METHOD URL, e.g. /http GET https://example.com/")

    def sink(self, settings: HttpSettings) -> str:
        if self.method in ("GET", "HEAD") and self.body is None and self.json_body is None:
            return ""
        return f"an HTTP {self.method} with a body to {urlsplit(self.url).hostname or self.url}"

    def check_policy(self, settings: HttpSettings, ctx: BindContext) -> None:
        check_url(
            self.url,
            allowed_hosts=settings.allowed_hosts,
            private_allowed=settings.private_allowed,
        )
