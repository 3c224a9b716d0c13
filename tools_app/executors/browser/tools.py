"""What the model sees: the browser functions. Each acts on the conversation's one page."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from tools_app.executors.browser.settings import BrowserSettings
from tools_app.netguard import check_url
from tools_app.registry import BaseTool
from tools_app.runtime import BindContext

WaitState = Literal["visible", "hidden", "attached", "detached"]


def _timeout() -> Any:
    # Seed 003's `timeout` per call: the model may give an action less time than the admin's
    # maximum (Browser → timeout seconds), never more: a longer one is cut to it.
    return Field(
        None,
        ge=1,
        description="Seconds this action may take (capped by the admin's maximum).",
    )


class BrowserOpen(BaseTool[BrowserSettings], group="browser", slash="browse"):
    """Open a web page in the conversation's browser and return its final URL, title and
    HTTP status. Cookies persist across calls in this conversation."""

    url: str = Field(description="http:// or https:// URL.", examples=["https://example.com/"])
    timeout: int | None = _timeout()

    @classmethod
    def from_shorthand(cls, text: str) -> dict[str, Any]:
        return {"url": text.strip()}

    def check_policy(self, settings: BrowserSettings, ctx: BindContext) -> None:
        check_url(
            self.url,
            allowed_hosts=settings.allowed_domains,
            private_allowed=settings.private_allowed,
        )


class BrowserScreenshot(BaseTool[BrowserSettings], group="browser"):
    """Take a PNG screenshot of the current page (the viewport, the full page, or one
    element) and return its file path and size. People see it in the tool card."""

    full_page: bool = Field(False, description="The whole scrollable page, not just the viewport.")
    selector: str | None = Field(
        None, description="CSS selector of one element to capture instead of the page."
    )
    timeout: int | None = _timeout()


class BrowserClick(BaseTool[BrowserSettings], group="browser"):
    """Click an element of the current page, found by CSS selector or by its visible text,
    and wait for any navigation it starts."""

    selector: str | None = Field(None, description="CSS selector, e.g. a#readme.")
    text: str | None = Field(None, description="Visible text of the element, e.g. README.")
    timeout: int | None = _timeout()

    @model_validator(mode="after")
    def _one_target(self) -> BrowserClick:
        if (self.selector is None) == (self.text is None):
            raise ValueError("give exactly one of selector or text")
        return self


class BrowserType(BaseTool[BrowserSettings], group="browser"):
    """Type text into an input of the current page (replacing its value), optionally
    pressing Enter to submit."""

    selector: str = Field(description="CSS selector of the input, e.g. input[name=q].")
    text: str = Field(description="The text to type.")
    submit: bool = Field(False, description="Press Enter afterwards.")
    timeout: int | None = _timeout()


class BrowserWait(BaseTool[BrowserSettings], group="browser"):
    """Wait until an element reaches a state, or for a number of milliseconds (capped by the
    call's timeout)."""

    selector: str | None = Field(None, description="CSS selector to wait for.")
    state: WaitState = Field("visible", description="State the element must reach.")
    milliseconds: int | None = Field(None, ge=0, description="Just wait this long instead.")
    timeout: int | None = _timeout()

    @model_validator(mode="after")
    def _one_condition(self) -> BrowserWait:
        if (self.selector is None) == (self.milliseconds is None):
            raise ValueError("give exactly one of selector or milliseconds")
        return self


class BrowserExtract(BaseTool[BrowserSettings], group="browser"):
    """Read the current page: its visible text, or its links (text and URL), optionally only
    inside the elements matching a CSS selector. Long text is cut with a notice."""

    kind: Literal["text", "links"] = Field("text", description="What to extract.")
    selector: str | None = Field(
        None, description="Only inside the elements matching this CSS selector."
    )
    timeout: int | None = _timeout()


class BrowserBack(BaseTool[BrowserSettings], group="browser"):
    """Go back to the previous page in the conversation's browser history."""

    timeout: int | None = _timeout()
