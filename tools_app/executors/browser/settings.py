"""The Browser group's admin-editable settings."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext as _
from pydantic import Field, field_validator

from tools_app.executors.browser.chromium import resolve_executable
from tools_app.registry import GroupSettings, ToolGroup, register_group


class BrowserSettings(GroupSettings):
    timeout_seconds: int = Field(
        30, ge=1, le=600, description="Longest one browser action may take (s)."
    )
    allowed_domains: list[str] = Field(
        default_factory=list,
        description="Hosts pages and every request they make may reach, one per line; globs "
        "like *.example.com (empty: any public host). Everything else is blocked.",
    )
    private_allowed: list[str] = Field(
        default_factory=list,
        description="Private or loopback hosts, IPs or CIDRs explicitly allowed despite the "
        "SSRF guard (e.g. an intranet site), one per line.",
    )
    max_screenshots_per_conversation: int = Field(
        10, ge=0, le=1000, description="Screenshots kept per conversation (0: none)."
    )
    viewport_width: int = Field(1280, ge=320, le=3840, description="Viewport width (px).")
    viewport_height: int = Field(800, ge=240, le=2160, description="Viewport height (px).")
    javascript_enabled: bool = Field(True, description="Let pages run JavaScript.")
    max_extract_chars: int = Field(
        20_000, ge=500, le=500_000, description="Text returned by browser_extract (characters)."
    )
    send_images_to_model: bool = Field(
        False,
        description="Attach screenshots to the model's tool result as images (only with a "
        "provider that accepts image input; otherwise the result names the file).",
    )

    @field_validator("allowed_domains", "private_allowed")
    @classmethod
    def _entries(cls, value: list[str]) -> list[str]:
        return [v.strip().lower() for v in value if v.strip()]


def _chromium_status() -> tuple[str, str, str]:
    """Which Chromium the pool launches (``chromium.resolve_executable``, what ``browser_info``
    reports too), asked of the resolver rather than the pool, which builds on these settings."""
    try:
        executable = resolve_executable()
    except ImproperlyConfigured as exc:
        return "bad", "Chromium missing", str(exc)
    return "ok", f"Chromium ({executable.source})", executable.shown


GROUP = register_group(
    ToolGroup(
        name="browser",
        untrusted_source="web pages",
        label=_("Browser"),
        description="A real Chromium per conversation: open pages, click, type, read and take "
        "screenshots. Every request is checked against the allowed domains and the SSRF guard.",
        settings_model=BrowserSettings,
        limits=(
            "timeout_seconds",
            "allowed_domains",
            "max_screenshots_per_conversation",
            "javascript_enabled",
        ),
        order=35,
        queue="browser",
        sandboxed=False,
        status=lambda settings: _chromium_status(),
    )
)
