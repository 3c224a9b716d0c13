"""Driving the connect flow as a browser would, with Django's test client on our side and
plain HTTP on the authorization server's side (its authorize endpoint and its sign-in page)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import requests

from tests.tools.mcp.oauth_servers import OAuthMcp


def authorize_at_server(authorize_url: str, *, account: str | None) -> str:
    """Follow the authorization request to the server's sign-in page and answer it; the URL the
    server sends the browser back to (our callback, with code and state or an error)."""
    http = requests.Session()
    first = http.get(authorize_url, allow_redirects=False, timeout=10)
    assert first.status_code == 302, (first.status_code, first.text[:300])
    page = http.get(first.headers["Location"], timeout=10)
    request = re.search(r"name='request' value='([^']*)'", page.text)
    assert request, page.text[:300]
    form = {"request": request.group(1), "decision": "allow" if account else "deny"}
    if account:
        form["account"] = account
    back = http.post(
        first.headers["Location"].split("?")[0], data=form, allow_redirects=False, timeout=10
    )
    assert back.status_code == 302, (back.status_code, back.text[:300])
    return str(back.headers["Location"])


def start(client: Any, source: str, *, next_url: str = "") -> str:
    response = client.get(
        f"/connections/{source}/connect/" + (f"?next={next_url}" if next_url else "")
    )
    assert response.status_code == 302, response.content[:500]
    return str(response["Location"])


def finish(client: Any, back: str) -> Any:
    parts = urlsplit(back)
    return client.get(f"{parts.path}?{parts.query}")


def connect(client: Any, served: OAuthMcp, source: str, account: str, next_url: str = "") -> Any:
    """The whole flow; our callback's response (a redirect to ``next_url`` or the page)."""
    authorize = start(client, source, next_url=next_url)
    assert authorize.startswith(served.base), authorize
    return finish(client, authorize_at_server(authorize, account=account))


def query(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def connected(client: Any, served: OAuthMcp, source: str, account: str) -> None:
    """``connect``, which must succeed (else the page's message says why)."""
    response = connect(client, served, source, account)
    page = client.get("/connections/").content.decode()
    assert response.status_code == 302 and account in page, page[page.find("banner") :][:600]
