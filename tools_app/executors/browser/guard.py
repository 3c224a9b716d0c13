"""The browser's request policy: which URLs a page may reach.

One judge for every entry point (the context's request router, its WebSocket router and the
pinning SOCKS proxy): the scheme must be http(s) or ws(s), the host must match the allowed
domains (empty: any host) and every address the name resolves to must pass the SSRF guard of
``tools_app.netguard`` unless ``private_allowed`` names it. ``data:``, ``blob:`` and
``about:`` URLs are not network requests (their content is already in the page) and pass;
every other scheme (``file:``, ``chrome:``, ``ftp:``, ...) is refused.

``check_url`` resolves names with blocking ``getaddrinfo``; it runs in the default thread
executor so the browser's event loop never stalls, and verdicts are cached per
(scheme, host, port) for a few seconds (cleared when a call starts).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from tools_app.errors import NetworkError, PolicyDenied
from tools_app.netguard import Target, check_url

PASS_SCHEMES = ("data", "blob", "about")
_WS_AS_HTTP = {"ws": "http", "wss": "https"}
CACHE_SECONDS = 10.0


@dataclass(frozen=True)
class Policy:
    allowed_domains: tuple[str, ...] = ()
    private_allowed: tuple[str, ...] = ()

    @classmethod
    def of(cls, allowed_domains: Sequence[str], private_allowed: Sequence[str]) -> Policy:
        return cls(tuple(allowed_domains), tuple(private_allowed))

    def check(self, url: str) -> Target:
        """Blocking: may resolve the host. Raises PolicyDenied."""
        return check_url(
            url, allowed_hosts=self.allowed_domains, private_allowed=self.private_allowed
        )


def _reason(exc: PolicyDenied) -> str:
    return exc.reason.removeprefix("URL refused: ")


class Judge:
    """Verdicts for URLs under one policy: None (allowed) or the reason for refusing."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self._cache: dict[tuple[str, str], tuple[float, str | None]] = {}

    def reset(self) -> None:
        self._cache.clear()

    async def verdict(self, url: str) -> str | None:
        scheme, sep, _ = url.partition(":")
        scheme = scheme.lower()
        if not sep:
            return "not a URL"
        if scheme in PASS_SCHEMES:
            return None
        if scheme in _WS_AS_HTTP:
            url = _WS_AS_HTTP[scheme] + url[len(scheme) :]
            scheme = _WS_AS_HTTP[scheme]
        if scheme not in ("http", "https"):
            return f"scheme {scheme!r} is not allowed"
        try:
            netloc = urlsplit(url).netloc.lower()
        except ValueError:
            return "the URL cannot be parsed"
        key = (scheme, netloc)
        now = time.monotonic()
        hit = self._cache.get(key)
        if hit is not None and now - hit[0] < CACHE_SECONDS:
            return hit[1]
        verdict = await self._check(url)
        self._cache[key] = (now, verdict)
        return verdict

    async def _check(self, url: str) -> str | None:
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(None, functools.partial(self.policy.check, url))
        except PolicyDenied as exc:
            return _reason(exc)
        except NetworkError:
            # Not a refusal: the request goes on to the pinning proxy, which fails to resolve
            # the name too and answers "unreachable", so the page sees a network error.
            return None
        return None


async def resolve_checked(policy: Policy, host: str, port: int) -> Target:
    """The pinned destination for a raw TCP connection to ``host:port`` (the SOCKS proxy).
    Raises PolicyDenied, or NetworkError when the name does not resolve."""
    shown = f"[{host}]" if ":" in host else host
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(
        None, functools.partial(policy.check, f"http://{shown}:{port}/")
    )


def reason_of(exc: PolicyDenied) -> str:
    return _reason(exc)
