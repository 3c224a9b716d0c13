"""SSRF attempts through extract_page_content: every refusal is per URL (the other pages are
still read) and leaves the victim server without a single request."""

from __future__ import annotations

from typing import Any

import pytest

from tests.tools.conftest import Tools
from tools_app.models import ToolCall

from .conftest import PAGES_HOST, VICTIM_HOST, allow_pages, redirect_url
from .servers import Server


def _refusal(call: ToolCall, url: str) -> str:
    assert call.status == ToolCall.Status.SUCCEEDED, call.result
    [refused] = [p for p in call.result["pages"] if p["url"] == url]
    assert refused["success"] is False
    return str(refused["error"])


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://{victim}/secret", "loopback"),
        ("http://localhost:{port}/secret", "loopback"),
        ("http://2130706433:{port}/secret", "loopback"),
        ("http://[::ffff:127.0.0.24]:{port}/secret", "IPv4-mapped loopback"),
        ("http://169.254.169.254/latest/meta-data/", "cloud metadata"),
        ("http://10.0.0.1/", "private"),
    ],
    ids=["loopback", "localhost", "decimal", "mapped", "metadata", "private"],
)
def test_it_refuses_internal_addresses(
    tools: Tools, owner: Any, pages: Server, victim: Server, url: str, reason: str
) -> None:
    allow_pages(owner, PAGES_HOST)
    bad = url.format(victim=f"{victim.host}:{victim.port}", port=victim.port)
    call = tools.call("extract_page_content", urls=[bad, pages.url("/plain")])
    error = _refusal(call, bad)
    assert error.startswith("policy: URL refused: "), error
    assert reason in error, error
    assert call.result["pages"][1]["success"] is True
    assert victim.hits == []


def test_a_redirect_to_an_internal_host_is_refused(
    tools: Tools, owner: Any, pages: Server, victim: Server
) -> None:
    allow_pages(owner, PAGES_HOST)
    target = victim.url("/secret")
    url = redirect_url(pages, target)
    call = tools.call("extract_page_content", urls=[url])
    assert call.status == ToolCall.Status.FAILED
    [page] = call.result["pages"]
    assert page["error"].startswith(f"policy: redirect to {target} refused: "), page
    assert "loopback" in page["error"]
    assert pages.paths() == ["/redirect"]
    assert victim.hits == []


def test_a_name_resolving_to_a_private_address_is_refused_unless_allowed(
    tools: Tools, owner: Any, victim: Server, fake_dns: dict[str, list[str]]
) -> None:
    fake_dns["intranet.example.com"] = [VICTIM_HOST]
    url = f"http://intranet.example.com:{victim.port}/secret"
    call = tools.call("extract_page_content", urls=[url])
    assert call.status == ToolCall.Status.FAILED
    [page] = call.result["pages"]
    assert f"'intranet.example.com' resolves to {VICTIM_HOST}" in page["error"], page
    assert victim.hits == []
    # The admin names the host under the HTTP group's private_allowed: now it is read.
    allow_pages(owner, "intranet.example.com")
    call = tools.call("extract_page_content", urls=[url])
    assert call.status == ToolCall.Status.SUCCEEDED, call.result
    assert call.result["pages"][0]["text"] == "Just plain text.\n"
    assert victim.paths() == ["/secret"]


def test_the_http_allowlist_applies_to_pages(tools: Tools, owner: Any, pages: Server) -> None:
    allow_pages(owner, PAGES_HOST, allowed_hosts=["*.example.org"])
    call = tools.call("extract_page_content", urls=[pages.url("/article")])
    assert call.status == ToolCall.Status.FAILED
    assert "is not in the allowed hosts (*.example.org)" in call.result["pages"][0]["error"]
    assert pages.hits == []
