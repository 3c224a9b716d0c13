"""Which event loop runs the two a turn lives on: the web server's and the agent runner's.

Both run on uvloop (libuv's loop for asyncio: the same API, with its transports, timers and
wake-ups from other threads in C) where it is installed. A turn crosses them many times (a
websocket frame, a model's stream, an event handed over from a worker thread to the page's
socket), and costs less CPU on uvloop (``bench/HISTORY.md``). ``CC_EVENT_LOOP=asyncio`` keeps
the standard library's loop. Other loops (the browser pool's, the MCP sessions', pytest's)
stay the standard library's: they drive subprocesses and SDKs tested on it.
"""

from __future__ import annotations

import asyncio
import sys

from infra.env import envchoice

LOOPS = ("uvloop", "asyncio")


def uvloop_wanted() -> bool:
    """``CC_EVENT_LOOP`` (another value than those of ``LOOPS`` stops the process with the
    choices); uvloop only where it is installed (pyproject leaves it out on Windows)."""
    if envchoice("CC_EVENT_LOOP", LOOPS, "uvloop") == "asyncio":
        return False
    try:
        import uvloop  # noqa: F401
    except ImportError:  # a platform without a uvloop build
        return False
    return True


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A new loop for a thread of our own (the agent runner's)."""
    if uvloop_wanted():
        import uvloop

        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def web_loop_install(argv: list[str]) -> None:
    """For ``manage.py serve``: Twisted's asyncio reactor on a loop of ``new_event_loop``.
    Before Django's apps load: Daphne's installs the reactor on a standard loop when it is
    imported, unless one is installed already."""
    if len(argv) > 1 and argv[1] == "serve" and "twisted.internet.reactor" not in sys.modules:
        from twisted.internet import asyncioreactor

        # Daphne's module still makes a standard loop of its own when imported; it stays
        # unused (and so does Daphne's ASGI_THREADS, which only sizes that loop's executor).
        asyncioreactor.install(new_event_loop())
