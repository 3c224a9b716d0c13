"""The safe HTTP fetch against real local servers (allowed through ``private_allowed``)."""

from __future__ import annotations

import datetime
import ipaddress
import json
import socket
import ssl
import threading
import time
import tracemalloc
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.helpers import require
from tools_app.errors import PolicyDenied, ToolCancelled, ToolError, ToolTimeout
from tools_app.executors.http.client import fetch

from .conftest import gzip_bomb, ipv6_loopback_works, serving

if TYPE_CHECKING:
    from .conftest import RecordingServer

LOCAL = ["127.0.0.3"]


def test_it_gets_text(local: RecordingServer) -> None:
    result = fetch("GET", local.url("/hello"), private_allowed=LOCAL)

    assert result.status == 200
    assert result.text == "hello"
    assert result.binary_note is None
    assert result.truncated is False
    assert result.url == local.url("/hello")
    assert result.redirects == []
    assert result.headers["content-type"] == "text/plain; charset=utf-8"
    assert result.elapsed_ms >= 0


def test_it_sends_the_host_header_and_defaults(local: RecordingServer) -> None:
    result = fetch("GET", local.url("/echo?a=1"), private_allowed=LOCAL)

    echoed = json.loads(result.text or "")
    assert echoed["path"] == "/echo?a=1"
    assert echoed["headers"]["host"] == f"127.0.0.3:{local.port}"
    assert echoed["headers"]["user-agent"].startswith("ControlCenter")
    assert echoed["headers"]["accept-encoding"] == "gzip, deflate"


def test_it_posts_json(local: RecordingServer) -> None:
    result = fetch("post", local.url("/echo"), json_body={"a": [1, 2]}, private_allowed=LOCAL)

    echoed = json.loads(result.text or "")
    assert echoed["method"] == "POST"
    assert json.loads(echoed["body"]) == {"a": [1, 2]}
    assert echoed["headers"]["content-type"] == "application/json"


def test_it_sends_a_body_and_custom_headers(local: RecordingServer) -> None:
    result = fetch(
        "PUT",
        local.url("/echo"),
        headers={"X-Test": "yes", "Content-Type": "text/csv", "Content-Length": "999"},
        body="a,b\n1,2",
        private_allowed=LOCAL,
    )

    echoed = json.loads(result.text or "")
    assert echoed["method"] == "PUT"
    assert echoed["body"] == "a,b\n1,2"
    assert echoed["headers"]["x-test"] == "yes"
    assert echoed["headers"]["content-type"] == "text/csv"
    assert echoed["headers"]["content-length"] == "7"  # ours, not the caller's


def test_it_supports_patch_delete_and_head(local: RecordingServer) -> None:
    for method in ("PATCH", "DELETE"):
        echoed = json.loads(fetch(method, local.url("/echo"), private_allowed=LOCAL).text or "")
        assert echoed["method"] == method

    head = fetch("HEAD", local.url("/hello"), private_allowed=LOCAL)
    assert head.status == 200
    assert head.text == ""
    assert head.headers["content-length"] == "5"


def test_it_returns_response_headers(local: RecordingServer) -> None:
    result = fetch("GET", local.url("/headers"), private_allowed=LOCAL)

    assert result.headers["x-custom"] == "abc"
    assert result.headers["x-multi"] == "1, 2"


def test_it_rejects_bad_methods_and_arguments(local: RecordingServer) -> None:
    before = len(local.hits)
    with pytest.raises(ToolError, match="not allowed"):
        fetch("TRACE", local.url(), private_allowed=LOCAL)
    with pytest.raises(ToolError, match="either body or json"):
        fetch("POST", local.url(), body="x", json_body={}, private_allowed=LOCAL)
    with pytest.raises(ToolError, match="line break"):
        fetch("GET", local.url(), headers={"X-A": "b\r\nX-Injected: 1"}, private_allowed=LOCAL)
    with pytest.raises(ToolError, match="Host header"):
        fetch("GET", local.url(), headers={"Host": "internal"}, private_allowed=LOCAL)
    assert len(local.hits) == before


def test_it_follows_redirects_and_records_them(local: RecordingServer) -> None:
    url = local.url("/redirect?to=/hello")

    result = fetch("GET", url, private_allowed=LOCAL)

    assert result.status == 200
    assert result.text == "hello"
    assert result.redirects == [local.url("/hello")]
    assert result.url == local.url("/hello")


def test_it_returns_the_redirect_when_not_following(local: RecordingServer) -> None:
    result = fetch(
        "GET", local.url("/redirect?to=/hello"), follow_redirects=False, private_allowed=LOCAL
    )

    assert result.status == 302
    assert result.headers["location"] == "/hello"
    assert result.redirects == []


def test_it_stops_after_max_redirects(local: RecordingServer) -> None:
    with pytest.raises(ToolError, match="stopped after 3 redirects"):
        fetch("GET", local.url("/loop"), max_redirects=3, private_allowed=LOCAL)


def test_it_turns_post_into_get_on_303(local: RecordingServer) -> None:
    url = local.url("/redirect?code=303&to=/echo")

    result = fetch("POST", url, json_body={"x": 1}, private_allowed=LOCAL)

    echoed = json.loads(result.text or "")
    assert echoed["method"] == "GET"
    assert echoed["body"] == ""
    assert "content-type" not in echoed["headers"]


def test_it_keeps_method_and_body_on_307(local: RecordingServer) -> None:
    result = fetch(
        "PUT", local.url("/redirect?code=307&to=/echo"), body="data", private_allowed=LOCAL
    )

    echoed = json.loads(result.text or "")
    assert (echoed["method"], echoed["body"]) == ("PUT", "data")


def test_it_drops_credentials_on_cross_origin_redirect(
    local: RecordingServer, allowed: RecordingServer
) -> None:
    secret = {"Authorization": "Bearer s3cret", "Cookie": "session=1", "X-Keep": "1"}
    same = fetch("GET", local.url("/redirect?to=/echo"), headers=secret, private_allowed=LOCAL)
    assert json.loads(same.text or "")["headers"]["authorization"] == "Bearer s3cret"

    cross = fetch(
        "GET",
        allowed.url(f"/redirect?to={local.url('/echo')}"),
        headers=secret,
        private_allowed=["127.0.0.2", *LOCAL],
    )

    headers = json.loads(cross.text or "")["headers"]
    assert "authorization" not in headers
    assert "cookie" not in headers
    assert headers["x-keep"] == "1"


def test_it_truncates_at_max_bytes(local: RecordingServer) -> None:
    result = fetch("GET", local.url("/big?n=5000"), max_bytes=1000, private_allowed=LOCAL)

    assert result.truncated is True
    assert result.text is not None
    body, _, notice = result.text.partition("\n\n[truncated")
    assert len(body) == 1000
    assert "first 1000 bytes" in notice


def test_it_does_not_truncate_a_body_that_fits(local: RecordingServer) -> None:
    result = fetch("GET", local.url("/big?n=1000"), max_bytes=1000, private_allowed=LOCAL)

    assert result.truncated is False
    assert result.text == ("abcdefghij" * 100)


def test_it_cuts_multibyte_text_on_a_character_boundary(local: RecordingServer) -> None:
    result = fetch("GET", local.url("/utf8"), max_bytes=101, private_allowed=LOCAL)

    assert result.truncated is True
    assert (result.text or "").startswith("é" * 50 + "\n\n[truncated")


def test_it_describes_binary_content(local: RecordingServer) -> None:
    result = fetch("GET", local.url("/binary"), private_allowed=LOCAL)

    assert result.text is None
    assert result.binary_note == "binary content (image/png, 10248 bytes) not shown"


def test_it_uses_the_declared_charset(local: RecordingServer) -> None:
    assert fetch("GET", local.url("/latin1"), private_allowed=LOCAL).text == "café"


def test_it_describes_undecodable_text_as_binary(local: RecordingServer) -> None:
    result = fetch("GET", local.url("/not-utf8"), private_allowed=LOCAL)

    assert result.text is None
    assert "not decodable as utf-8" in (result.binary_note or "")


def test_it_inflates_gzip_and_deflate(local: RecordingServer) -> None:
    assert fetch("GET", local.url("/gzip"), private_allowed=LOCAL).text == "compressed hello " * 10
    assert fetch("GET", local.url("/deflate"), private_allowed=LOCAL).text == "deflated hello"


def test_it_caps_a_decompression_bomb_by_decoded_bytes(local: RecordingServer) -> None:
    gzip_bomb()  # built (and cached) before measuring, so only the client is measured
    tracemalloc.start()
    try:
        result = fetch("GET", local.url("/bomb"), max_bytes=100_000, private_allowed=LOCAL)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert result.truncated is True
    assert (result.text or "").startswith("\0" * 100_000 + "\n\n[truncated")
    assert peak < 10_000_000  # the bomb inflates to 50 MB


def test_it_bounds_a_slow_drip_by_the_total_timeout(local: RecordingServer) -> None:
    started = time.monotonic()

    with pytest.raises(ToolTimeout, match=r"timed out after 1\.5 s"):
        fetch("GET", local.url("/drip"), timeout=1.5, private_allowed=LOCAL)

    assert time.monotonic() - started < 2.2


def test_it_bounds_slow_headers_by_the_timeout(local: RecordingServer) -> None:
    started = time.monotonic()

    with pytest.raises(ToolTimeout, match="timed out after 1 s"):
        fetch("GET", local.url("/slow-headers"), timeout=1, private_allowed=LOCAL)

    assert time.monotonic() - started < 1.7


def test_it_stops_promptly_when_cancelled(local: RecordingServer) -> None:
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    started = time.monotonic()

    with pytest.raises(ToolCancelled):
        fetch("GET", local.url("/drip"), timeout=10, cancel=cancel, private_allowed=LOCAL)

    assert time.monotonic() - started < 1.0


def test_it_does_nothing_when_already_cancelled(local: RecordingServer) -> None:
    cancel = threading.Event()
    cancel.set()
    before = len(local.hits)

    with pytest.raises(ToolCancelled):
        fetch("GET", local.url(), cancel=cancel, private_allowed=LOCAL)

    assert len(local.hits) == before


def test_it_reports_a_refused_connection() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.3", 0))
        port = s.getsockname()[1]

    with pytest.raises(ToolError, match="could not connect") as caught:
        fetch("GET", f"http://127.0.0.3:{port}/", timeout=5, private_allowed=LOCAL)

    assert caught.value.permanent is False


def test_it_ignores_proxy_environment_variables(
    local: RecordingServer, victim: RecordingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, victim.url("/"))
    before = len(victim.hits)

    result = fetch("GET", local.url("/hello"), private_allowed=LOCAL)

    assert result.text == "hello"
    assert len(victim.hits) == before


def test_it_connects_to_the_checked_address_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """DNS rebinding: the first answer is allowed, any later answer points at the victim.
    Both servers share a port, so a second lookup would land on the victim, not fail."""
    with serving("127.0.0.1") as victim, serving("127.0.0.2", port=victim.port) as good:
        answers = iter(["127.0.0.2", "127.0.0.1", "127.0.0.1"])
        lookups: list[str] = []
        real = socket.getaddrinfo

        def rebinding(host: object, port: object, *args: object, **kwargs: object) -> list:
            if host != "rebind.test":
                return real(host, port, *args, **kwargs)  # type: ignore[arg-type]
            lookups.append(str(host))
            address = next(answers)
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

        monkeypatch.setattr(socket, "getaddrinfo", rebinding)

        result = fetch(
            "GET", f"http://rebind.test:{victim.port}/echo", private_allowed=["127.0.0.2"]
        )

        assert len(lookups) == 1
        assert len(good.hits) == 1 and victim.hits == []
        assert json.loads(result.text or "")["headers"]["host"] == f"rebind.test:{victim.port}"
        with pytest.raises(PolicyDenied, match="loopback"):  # the rebinding was real
            fetch("GET", f"http://rebind.test:{victim.port}/", private_allowed=["127.0.0.2"])
        assert victim.hits == []


def test_it_fetches_over_ipv6() -> None:
    require(ipv6_loopback_works(), "no IPv6 loopback here")
    with serving("::1") as server:
        result = fetch("GET", server.url("/echo"), private_allowed=["::1"])

    assert json.loads(result.text or "")["headers"]["host"] == f"[::1]:{server.port}"


# --- TLS -----------------------------------------------------------------------------------


def _certificate(name: str) -> tuple[bytes, bytes]:
    """A self-signed certificate for DNS name ``name`` only (no IP address in it)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RecordingServer, bytes]]:
    cert_pem, key_pem = _certificate("tls.test")
    folder = tmp_path_factory.mktemp("tls")
    (folder / "cert.pem").write_bytes(cert_pem)
    (folder / "key.pem").write_bytes(key_pem)
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(folder / "cert.pem", folder / "key.pem")
    with serving("127.0.0.4", tls=server_ctx) as server:
        yield server, cert_pem


def _trusting(cert_pem: bytes) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=cert_pem.decode())


def test_it_verifies_tls_against_the_host_name_not_the_address(
    tls_server: tuple[RecordingServer, bytes], fake_dns: dict[str, list[str]]
) -> None:
    server, cert_pem = tls_server
    fake_dns["tls.test"] = ["127.0.0.4"]

    result = fetch(
        "GET",
        f"https://tls.test:{server.port}/echo",
        ssl_context=_trusting(cert_pem),
        private_allowed=["127.0.0.4"],
    )

    assert json.loads(result.text or "")["headers"]["host"] == f"tls.test:{server.port}"
    assert server.sni_names[-1] == "tls.test"


def test_it_refuses_a_certificate_for_another_name(
    tls_server: tuple[RecordingServer, bytes], fake_dns: dict[str, list[str]]
) -> None:
    server, cert_pem = tls_server
    fake_dns["other.test"] = ["127.0.0.4"]
    before = len(server.hits)

    with pytest.raises(ToolError, match="could not be verified") as caught:
        fetch(
            "GET",
            f"https://other.test:{server.port}/",
            ssl_context=_trusting(cert_pem),
            private_allowed=["127.0.0.4"],
        )

    assert "other.test" in str(caught.value)
    with pytest.raises(ToolError, match="could not be verified"):
        fetch(  # the address alone is not enough either: the certificate names tls.test
            "GET",
            f"https://127.0.0.4:{server.port}/",
            ssl_context=_trusting(cert_pem),
            private_allowed=["127.0.0.4"],
        )
    assert len(server.hits) == before


def test_it_refuses_an_untrusted_certificate(
    tls_server: tuple[RecordingServer, bytes], fake_dns: dict[str, list[str]]
) -> None:
    server, _ = tls_server
    fake_dns["tls.test"] = ["127.0.0.4"]

    with pytest.raises(ToolError, match="could not be verified"):
        fetch("GET", f"https://tls.test:{server.port}/", private_allowed=["127.0.0.4"])


def test_it_keeps_the_address_checked_in_ip_form() -> None:
    # Sanity check of the fixture addresses used above: all loopback, none public.
    for address in ("127.0.0.2", "127.0.0.3", "127.0.0.4"):
        assert ipaddress.ip_address(address).is_loopback
