"""Which Chromium to run, and with which switches.

Order: ``CHROMIUM_PATH`` when set (an operator's explicit choice wins); else Playwright's own
Chromium when ``playwright install chromium`` put it in place; else the system's
``chromium``/``chromium-browser`` on PATH, falling back to ``/usr/bin/chromium``.
"""

from __future__ import annotations

import functools
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

LAUNCH_ARGS = [
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    # WebRTC UDP never goes through the SOCKS proxy; refuse it instead of leaking around it.
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    # Send loopback through the proxy as well (Playwright adds this too, unless an environment
    # variable tells it not to; repeating it makes the guard independent of that variable).
    "--proxy-bypass-list=<-loopback>",
]


@dataclass(frozen=True)
class Executable:
    path: str | None  # None: Playwright's own browser
    source: str  # "CHROMIUM_PATH", "playwright", "system"
    shown: str  # what the Tools Manager prints


def sandbox_enabled() -> bool:
    """Chromium's own sandbox needs user namespaces or a setuid helper and does not run as
    root; like the rest of the project it is off unless ``CHROMIUM_SANDBOX=true``."""
    return bool(settings.CHROMIUM_SANDBOX)


def resolve_executable(bundled: str | None = None) -> Executable:
    """``bundled``: Playwright's ``chromium.executable_path`` when the caller has a driver
    running already; otherwise it is looked up once (which starts the driver briefly)."""
    configured = str(settings.CHROMIUM_PATH)
    if configured:
        if not Path(configured).exists():
            raise ImproperlyConfigured(f"CHROMIUM_PATH={configured} does not exist")
        return Executable(configured, "CHROMIUM_PATH", configured)
    bundled = bundled if bundled is not None else playwright_bundled_path()
    if bundled and Path(bundled).exists():
        return Executable(None, "playwright", bundled)
    system = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
    return Executable(system, "system", system)


@functools.cache
def playwright_bundled_path() -> str:
    """Where Playwright keeps its own Chromium (it may not be installed there)."""
    box: dict[str, str] = {}

    def look() -> None:
        # In a thread of its own: sync_playwright refuses to run inside an asyncio loop.
        from playwright.sync_api import sync_playwright

        try:
            with sync_playwright() as p:
                box["path"] = p.chromium.executable_path
        except Exception as exc:  # a broken driver must not break the Tools Manager
            box["error"] = str(exc)

    thread = threading.Thread(target=look, name="playwright-probe", daemon=True)
    thread.start()
    thread.join(timeout=30)
    return box.get("path", "")
