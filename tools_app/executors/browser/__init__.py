"""Browser tool: a real Chromium that the model drives one action at a time.

Functions: ``browser_open``, ``browser_screenshot``, ``browser_click``, ``browser_type``,
``browser_wait``, ``browser_extract``, ``browser_back``. Each returns the page's ``url`` and
``title`` plus what the action produced, and runs on the ``browser`` Celery queue.

Threading (``pool.py``). Playwright is thread-bound, activities are not: each process has one
``BrowserPool`` thread running an asyncio loop that owns the Playwright driver, one warm
Chromium and one context per conversation (key: the workspace id). Activities submit
coroutines with ``run_coroutine_threadsafe`` and wait in 50 ms slices, honouring Stop and
the timeout; a cancelled action's page is closed (cookies stay). Actions on one conversation
run one at a time (a lock per context); different conversations run concurrently. After a
fork (Celery prefork) the child starts its own pool. Contexts idle for 10 min and a browser
idle for 30 min are closed by the maintenance loop (a hook in ``infra.maintenance``).

Contexts (``session.py``, ``handoff.py``). Created with the admin's viewport and JavaScript
switch, ``service_workers="block"`` and ``accept_downloads=False``; recreated when those or
the allowlists change. One current page per context. Cookies live for the conversation, never
shared with another one; the URL and cookies are also saved after each call so another worker
process can carry on (prefork children do not share contexts).

Network policy (``guard.py``, ``session.py``, ``socks.py``), two layers:
1. the context's router sees every request (navigations, subresources, iframes, fetch/XHR,
   workers, popups) and aborts it unless the scheme is http(s), the host matches
   ``allowed_domains`` (empty: any public host) and its addresses pass the SSRF guard of
   ``tools_app.netguard`` (``private_allowed`` lifts it per host/IP/CIDR); WebSockets are
   routed the same way (refused ones are closed with 1008 before connecting);
2. Chromium reaches the network only through a pinning SOCKS5 proxy in the pool, which checks
   every TCP connection with the same policy, resolves the name once and connects to the
   address it checked. Chromium resolves nothing itself, so DNS rebinding between the check
   and the connection is closed, and sockets the router never sees (preconnects, background
   traffic) are held to the same rules. WebRTC's UDP is disabled by a launch flag.
The layers cover each other's gaps: Playwright routes only the first URL of a redirect chain
and does not route workers' WebSockets, so later redirect hops and such sockets are stopped by
the proxy (the refusal is still reported, with its reason). Refusals that happen between calls
(timers, late scripts) are reported with the next call. ``data:``, ``blob:`` and ``about:``
URLs carry their content inside the page and are allowed; every other scheme is refused.
``browser_open`` also checks its URL at bind time, like the HTTP tool.

Popups never load: their navigation is aborted and the page closed. A popup opened by a
``browser_click`` (``target=_blank``, ``window.open`` in a handler) is followed in the current
page instead, through the same checks. Downloads are refused and reported.

Crashes: a dead Chromium is relaunched on the next call, or in the middle of one (the action
is retried once); the result says ``"browser_relaunched": true`` and the card says so. The
conversation's cookies and last URL come back from the saved state; the page is reopened.
A crashed page (renderer) is reopened the same way.

Screenshots (``screenshots.py``, ``views.py``) are PNG files under
``MEDIA_DIR/screenshots/<workspace>/`` with a ``Screenshot`` row, capped per conversation,
served at ``/media/screenshots/<id>/`` only to the conversation's owner and staff (404 for
everyone else) and shown in the card as a thumbnail. The model gets
``{"screenshot": {"id", "url", "width", "height", "bytes", "path"}}``, never base64;
``images_for_model`` hands the image to a provider with image input when the admin enabled
``send_images_to_model``.

Chromium (``chromium.py``): ``CHROMIUM_PATH`` if set, else Playwright's own build if
installed, else the system's ``chromium``. ``browser_info()`` tells which, and the pool's
state in this process; the Tools Manager's status asks the resolver (``settings.py``).
Chromium's own sandbox is off (as everywhere in the project: it does not run as root) unless
``CHROMIUM_SANDBOX=true``.

Limits worth knowing: localStorage/sessionStorage do not travel between worker processes;
two calls of one conversation running at once in different processes each act on their own
copy; several machines share browser state only through a shared ``VAR_DIR``. With an empty
allowlist, the few background requests Chromium makes despite its flags (e.g. to
accounts.google.com) leave through the proxy like any request to a public host.
"""

from __future__ import annotations

import sys
from typing import Any


def browser_info() -> dict[str, Any]:
    """For the Tools Manager: which Chromium this process uses or would use, and its pool."""
    from django.core.exceptions import ImproperlyConfigured

    from tools_app.executors.browser.chromium import resolve_executable
    from tools_app.executors.browser.pool import existing_pool

    pool = existing_pool()
    info: dict[str, Any] = {"pool": pool.stats() if pool is not None else None}
    if pool is not None and pool.executable is not None:
        executable = pool.executable
    else:
        try:
            executable = resolve_executable()
        except ImproperlyConfigured as exc:
            return {**info, "executable": None, "source": "error", "error": str(exc)}
    info.update(executable=executable.shown, source=executable.source)
    return info


def browser_maintenance() -> None:
    """A maintenance step (registered by ``tools_app.apps``): close idle contexts and sweep
    hand-off files."""
    from tools_app.executors.browser import handoff

    # No pool module loaded, no pool: the sweep must not load Playwright to find that out.
    pool_module = sys.modules.get("tools_app.executors.browser.pool")
    pool = pool_module.existing_pool() if pool_module is not None else None
    if pool is not None:
        pool.reap()
    handoff.sweep(handoff.CONTEXT_IDLE_SECONDS)
