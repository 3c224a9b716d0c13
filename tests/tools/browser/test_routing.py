"""Deny-by-default routing: attacks from hostile pages against servers that record every
request and every TCP connection. The page server (127.0.0.1) is allowed; the victim
(127.0.0.2) never is and must see nothing at all; 127.0.0.3 passes the address guard but is
not an allowed domain, so it must see nothing either."""

from __future__ import annotations

import asyncio
import socket

from tests.tools.browser.conftest import configure
from tools_app.models import ToolCall


def _blocked_urls(result):
    return [b["url"] for b in result.get("blocked_requests", [])]


def test_opening_a_domain_that_is_not_allowed_is_denied(browser, site, victim, other):
    for url in (victim.url("/"), other.url("/"), "http://169.254.169.254/latest/meta-data/"):
        call = browser.call("browser_open", url=url)
        assert call.status == ToolCall.Status.DENIED, call.result
        assert "policy: URL refused" in call.error
    victim.assert_untouched()
    other.assert_untouched()


def test_non_http_schemes_are_refused(browser):
    for url in ("file:///etc/passwd", "chrome://settings", "javascript:alert(1)", "data:,hi"):
        call = browser.call("browser_open", url=url)
        assert call.status == ToolCall.Status.DENIED, (url, call.result)


def test_a_redirect_to_a_victim_is_blocked(browser, site, victim):
    for target in (victim.url("/redirected"), "http://169.254.169.254/latest/meta-data/"):
        call = browser.call("browser_open", url=site.url(f"/redirect?to={target}"))
        assert call.status == ToolCall.Status.DENIED, call.result
        assert f"navigation to {target} was blocked" in call.error
    victim.assert_untouched()


def test_a_link_to_a_victim_is_blocked_when_clicked(browser, site, victim):
    browser.ok("browser_open", url=site.url("/links-away"))
    call = browser.call("browser_click", selector="#away")
    assert call.status == ToolCall.Status.DENIED
    assert f"navigation to {victim.url('/clicked')} was blocked" in call.error
    # The conversation is still on the page it was on, not on Chromium's error page.
    assert browser.ok("browser_extract")["url"] == site.url("/links-away")
    victim.assert_untouched()


def test_subresources_of_every_kind_are_blocked(browser, site, victim, other):
    result = browser.ok("browser_open", url=site.url("/subresources"))
    # Let fetches, beacons and the worker fire; what is refused meanwhile comes with this call.
    waited = browser.ok("browser_wait", milliseconds=500)
    assert result["title"] == "Subresources"  # the page's script ran
    assert "/pixel.gif" in site.paths()  # and its own image loaded
    blocked = " ".join(_blocked_urls(result))
    for origin in (victim.origin, other.origin, "http://169.254.169.254"):
        assert origin + "/img.png" in blocked or result.get("blocked_requests_total", 0) > 20
    kinds = {b["kind"] for r in (result, waited) for b in r.get("blocked_requests", [])}
    assert {"image", "script", "stylesheet", "frame"} <= kinds, kinds
    victim.assert_untouched()
    other.assert_untouched()


def test_the_address_guard_holds_when_any_public_host_is_allowed(browser, site, victim):
    configure(allowed_domains=[], private_allowed=["127.0.0.1"])
    result = browser.ok("browser_open", url=site.url("/subresources"))
    browser.ok("browser_wait", milliseconds=500)
    reasons = {b["reason"] for b in result["blocked_requests"]}
    assert any("loopback" in r for r in reasons), reasons
    assert any("cloud metadata" in r for r in reasons), reasons
    victim.assert_untouched()


def test_websockets_to_victims_are_closed_before_connecting(browser, site, victim, other):
    opened = browser.ok("browser_open", url=site.url("/websockets"))
    waited = browser.ok("browser_wait", selector="#worker:not(:empty)", state="attached")
    # A socket refused after the first call returned is reported with the next one.
    blocked = opened.get("blocked_requests", []) + waited.get("blocked_requests", [])
    sockets = [b["url"] for b in blocked if b["kind"].startswith("websocket")]
    assert sorted(sockets) == sorted(
        [
            f"ws://127.0.0.2:{victim.port}/ws",
            f"ws://127.0.0.3:{other.port}/ws",
            "ws://169.254.169.254/ws",
        ]
    )
    assert browser.ok("browser_extract", selector="#log")["text"] == "1008 1008 1008"
    # A worker's socket is not routed by Playwright; the pinning proxy refuses it instead.
    assert browser.ok("browser_extract", selector="#worker")["text"] == "closed"
    victim.assert_untouched()
    other.assert_untouched()


def test_popups_cannot_reach_a_victim(browser, site, victim):
    opened = browser.ok("browser_open", url=site.url("/popups"))
    waited = browser.ok("browser_wait", milliseconds=200)
    # The load-time popups are closed during the open, or reported with the next call.
    seen = opened.get("popups_closed", []) + _blocked_urls(opened) + _blocked_urls(waited)
    assert victim.url("/popup") in seen
    for selector in ("#bad", "#js"):
        call = browser.call("browser_click", selector=selector)
        assert call.status == ToolCall.Status.SUCCEEDED, call.result
        assert call.result["url"] == site.url("/popups")  # the page stayed where it was
        assert call.result["popups_closed"]
    victim.assert_untouched()


def test_a_click_that_opens_an_allowed_tab_follows_it_in_the_current_page(browser, site):
    browser.ok("browser_open", url=site.url("/popups"))
    result = browser.ok("browser_click", selector="#good")
    assert result["popup_followed"] == site.url("/readme")
    assert (result["url"], result["title"]) == (site.url("/readme"), "README")
    assert browser.ok("browser_back")["url"] == site.url("/popups")


def test_a_service_worker_is_never_installed(browser, site, victim):
    """Registration is blocked: the worker script is never even fetched, so it cannot
    intercept the page's requests and send them to the victim."""
    browser.ok("browser_open", url=site.url("/sw"))
    browser.ok("browser_wait", milliseconds=500)
    browser.ok("browser_open", url=site.url("/sw"))  # a second load would use an active SW
    browser.ok("browser_wait", milliseconds=300)
    assert "/probe" in site.paths()  # the page ran and fetched through the network
    assert "/sw.js" not in site.paths()
    victim.assert_untouched()


def test_downloads_are_refused(browser, site, media_dir):
    browser.ok("browser_open", url=site.url("/download"))
    result = browser.ok("browser_click", selector="#dl")
    assert result["downloads_refused"] == [site.url("/file.bin")]
    call = browser.call("browser_open", url=site.url("/file.bin"))
    assert call.status == ToolCall.Status.FAILED
    assert "downloads are refused" in call.error


def test_dns_rebinding_cannot_reach_the_victim(browser, site, victim, monkeypatch):
    """Binding's check sees a name that resolves to the allowed page server; every later
    lookup answers with the victim. Whichever layer looks next (the router, or the pinning
    proxy when Chromium opens a connection first) refuses, and nothing reaches the victim."""
    answers = _rebinding_dns(monkeypatch, first=["127.0.0.1"], then="127.0.0.2")
    configure(allowed_domains=["rebind.test"], private_allowed=["127.0.0.1"])
    call = browser.call("browser_open", url=f"http://rebind.test:{victim.port}/")
    assert answers["count"] >= 2
    assert call.status == ToolCall.Status.DENIED, call.result
    assert "127.0.0.2" in call.error and "loopback" in call.error
    victim.assert_untouched()


def test_the_proxy_connects_only_to_the_address_it_checked(site, victim, monkeypatch):
    """The pinning proxy on its own: the router said yes to rebind.test (it resolved to the
    page server), but the name now resolves to the victim; the proxy refuses (SOCKS reply 2)
    instead of connecting there, and still serves names that pass."""
    from tools_app.executors.browser.guard import Policy
    from tools_app.executors.browser.socks import PinningProxy

    _rebinding_dns(monkeypatch, first=[], then="127.0.0.2", fixed={"good.test": "127.0.0.1"})
    policy = Policy.of(["rebind.test", "good.test"], ["127.0.0.1"])

    async def scenario() -> tuple[int, bytes]:
        proxy = PinningProxy(lambda: policy)
        port = await proxy.start()
        try:
            refused = await _socks_connect(port, "rebind.test", victim.port)
            reply, reader, writer = await _socks_open(port, "good.test", site.port)
            writer.write(b"GET /readme HTTP/1.1\r\nHost: good.test\r\nConnection: close\r\n\r\n")
            body = await reader.read()
            writer.close()
            assert reply == 0
            return refused, body
        finally:
            await proxy.close()

    refused, body = asyncio.run(scenario())
    assert refused == 2  # connection not allowed by ruleset
    assert b"README" in body
    victim.assert_untouched()


def _rebinding_dns(monkeypatch, *, first, then, fixed=None):
    real = socket.getaddrinfo
    answers = {"count": 0}
    fixed = fixed or {}

    def lookup(host, port, *args, **kwargs):
        name = str(host)
        if name in fixed:
            address = fixed[name]
        elif name == "rebind.test":
            answers["count"] += 1
            address = first[answers["count"] - 1] if answers["count"] <= len(first) else then
        else:
            return real(host, port, *args, **kwargs)
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    return answers


async def _socks_open(port, host, target_port):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"\x05\x01\x00")
    assert await reader.readexactly(2) == b"\x05\x00"
    name = host.encode()
    writer.write(b"\x05\x01\x00\x03" + bytes([len(name)]) + name + target_port.to_bytes(2, "big"))
    reply = await reader.readexactly(10)
    return reply[1], reader, writer


async def _socks_connect(port, host, target_port):
    reply, _reader, writer = await _socks_open(port, host, target_port)
    writer.close()
    return reply


def test_past_the_listed_twenty_each_new_kind_of_blocked_request_is_still_listed():
    """A page's many blocked images must not hide its blocked frame from the model and the
    card (the list used to stop at twenty, so which kinds showed depended on load order)."""
    from tools_app.executors.browser.session import MAX_NOTES, CallTrace

    emitted: list[str] = []
    trace = CallTrace(emit=emitted.append)
    for i in range(MAX_NOTES + 5):
        trace.block(f"http://victim.test/{i}.png", "not allowed", "image")
    trace.block("http://victim.test/frame", "not allowed", "frame")
    trace.block("http://victim.test/frame2", "not allowed", "frame")
    summary = trace.summary()
    kinds = [b["kind"] for b in summary["blocked_requests"]]
    assert kinds == ["image"] * MAX_NOTES + ["frame"]
    assert summary["blocked_requests_total"] == MAX_NOTES + 7
    assert len(emitted) == MAX_NOTES + 1
