"""Real local web servers for the browser tests (tests/httpserver.py).

``Site`` serves pages from a table and records every HTTP request AND every TCP connection it
accepts, so a test can prove that nothing reached a victim, not even a bare connect.
Servers listen on separate loopback addresses because the SSRF guard's exceptions
(``private_allowed``) are per host/IP, not per port: the page server (127.0.0.1) is allowed,
the victim (127.0.0.2) never is, and 127.0.0.3 is allowed by the address guard but not by
the domain allowlist.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from tests.httpserver import Hit, HttpServer, Response
from tests.httpserver import serving as shared_serving

__all__ = ["Page", "Request", "Response", "Site", "html", "serving"]

Request = Hit
Page = Callable[[Request], Response]


class Site(HttpServer):
    def paths(self) -> list[str]:
        """What the browser asked for, query included."""
        with self._lock:
            return [h.target for h in self.hits]


def html(title: str, body: str, *, head: str = "") -> Response:
    doc = (
        f"<!doctype html><html><head><title>{title}</title>{head}</head><body>{body}</body></html>"
    )
    return 200, [("Content-Type", "text/html; charset=utf-8")], doc.encode()


def _victim_says_hello(request: Request) -> Response:
    return 200, [], b"victim says hello"


@contextlib.contextmanager
def serving(host: str, pages: dict[str, Page] | None = None) -> Iterator[Site]:
    """Pages by path; any other path answers "victim says hello"."""
    pages = dict(pages or {})
    with shared_serving(host, pages, default=_victim_says_hello, server_class=Site) as site:
        yield site
