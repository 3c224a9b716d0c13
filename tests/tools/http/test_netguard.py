"""The address/URL guard on its own: classification, host globs, URL parsing."""

from __future__ import annotations

import pytest

from tools_app.errors import NetworkError, PolicyDenied
from tools_app.netguard import Target, check_url, classify_address, host_matches

CLASSIFICATION = [
    # public
    ("8.8.8.8", None),
    ("1.1.1.1", None),
    ("93.184.216.34", None),
    ("2606:4700:4700::1111", None),
    ("2a00:1450:4001:80b::200e", None),
    ("::ffff:8.8.8.8", None),  # mapped public is the public address
    ("64:ff9b::808:808", None),  # NAT64 of a public address is how IPv6-only hosts get out
    ("2002:808:808::1", None),  # 6to4 of a public address
    # IPv4 special
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "reserved (this network)"),
    ("127.0.0.1", "loopback"),
    ("127.255.255.255", "loopback"),
    ("10.0.0.1", "private"),
    ("10.255.255.255", "private"),
    ("172.16.0.1", "private"),
    ("172.31.255.255", "private"),
    ("172.32.0.1", None),
    ("192.168.1.1", "private"),
    ("100.64.0.1", "shared address space (CGNAT)"),
    ("100.127.255.255", "shared address space (CGNAT)"),
    ("100.128.0.1", None),
    ("169.254.0.1", "link-local"),
    ("169.254.169.254", "cloud metadata"),
    ("169.254.170.2", "cloud metadata"),
    ("100.100.100.200", "cloud metadata"),
    ("192.0.0.192", "cloud metadata"),
    ("168.63.129.16", "cloud metadata"),
    ("192.0.0.8", "reserved (IETF protocol assignments)"),
    ("192.0.2.1", "documentation"),
    ("198.51.100.1", "documentation"),
    ("203.0.113.1", "documentation"),
    ("192.88.99.1", "reserved (6to4 relay anycast)"),
    ("198.18.0.1", "benchmarking"),
    ("198.19.255.255", "benchmarking"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "broadcast"),
    # IPv6 special
    ("::", "unspecified"),
    ("::1", "loopback"),
    ("fe80::1", "link-local"),
    ("fe80::1%eth0", "link-local"),
    ("febf::1", "link-local"),
    ("fec0::1", "site-local"),
    ("fc00::1", "unique-local"),
    ("fd12:3456::1", "unique-local"),
    ("fd00:ec2::254", "cloud metadata"),
    ("ff02::1", "multicast"),
    ("ff05::2", "multicast"),
    ("2001:db8::1", "documentation"),
    ("3fff::1", "documentation"),
    ("2001:2::1", "benchmarking"),
    ("2001:10::1", "reserved (ORCHID)"),
    ("2001:20::1", "reserved (ORCHIDv2)"),
    ("100::1", "reserved (discard-only)"),
    ("5f00::1", "reserved (segment routing)"),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "teredo"),
    ("::ffff:0:7f00:1", "reserved (IPv4-translated)"),
    ("4000::1", "reserved"),  # outside 2000::/3, unallocated
    # IPv6 forms carrying an IPv4 address
    ("::ffff:127.0.0.1", "IPv4-mapped loopback"),
    ("::ffff:7f00:1", "IPv4-mapped loopback"),
    ("::ffff:10.0.0.1", "IPv4-mapped private"),
    ("::ffff:169.254.169.254", "IPv4-mapped cloud metadata"),
    ("::ffff:0.0.0.0", "IPv4-mapped unspecified"),
    ("::127.0.0.1", "IPv4-compatible loopback"),
    ("::10.0.0.1", "IPv4-compatible private"),
    ("::8.8.8.8", "reserved (IPv4-compatible)"),
    ("64:ff9b::127.0.0.1", "NAT64 of loopback"),
    ("64:ff9b::10.0.0.1", "NAT64 of private"),
    ("64:ff9b::169.254.169.254", "NAT64 of cloud metadata"),
    ("64:ff9b:1::7f00:1", "NAT64 of loopback"),
    ("64:ff9b:1::808:808", "NAT64 (local-use prefix)"),
    ("2002:7f00:1::", "6to4 of loopback"),
    ("2002:a00:1::1", "6to4 of private"),
    ("2002:a9fe:a9fe::", "6to4 of cloud metadata"),
    ("2002:6440:1::", "6to4 of shared address space (CGNAT)"),
]


@pytest.mark.parametrize(("address", "reason"), CLASSIFICATION, ids=[a for a, _ in CLASSIFICATION])
def test_it_classifies(address: str, reason: str | None) -> None:
    assert classify_address(address) == reason


def test_it_rejects_non_addresses() -> None:
    with pytest.raises(ValueError):
        classify_address("localhost")


HOST_MATCHES = [
    ("api.github.com", ["*.github.com"], True),
    ("a.b.github.com", ["*.github.com"], True),
    ("API.GitHub.com.", ["*.github.com"], True),
    ("github.com", ["*.github.com"], False),
    ("github.com", ["*.github.com", "github.com"], True),
    ("evilgithub.com", ["*.github.com"], False),
    ("github.com.evil.com", ["*.github.com"], False),
    ("evil.com?.github.com", ["*.github.com"], False),
    ("example.com", ["EXAMPLE.COM."], True),
    ("example.com", [], False),
    ("anything.example", ["*"], True),
    ("api-v2.example.com", ["api-*.example.com"], True),
    ("api.v2.example.com", ["api-*.example.com"], False),
    ("a.b.example.com", ["*.*.example.com"], True),
    ("bücher.de", ["xn--bcher-kva.de"], True),
    ("xn--bcher-kva.de", ["bücher.de"], True),
    ("ｅｘａｍｐｌｅ.com", ["example.com"], True),
    ("10.1.2.3", ["10.0.0.0/8"], True),
    ("10.1.2.3", ["10.1.2.3"], True),
    ("[::1]", ["::1"], True),
    ("10.1.2.3", ["*.1.2.3"], False),  # globs are for names, not addresses
    ("", ["*"], False),
    ("bad host", ["*"], False),
]


@pytest.mark.parametrize(("host", "patterns", "expected"), HOST_MATCHES)
def test_it_matches_hosts(host: str, patterns: list[str], expected: bool) -> None:
    assert host_matches(host, patterns) is expected


def test_it_normalises_a_url(fake_dns: dict[str, list[str]]) -> None:
    fake_dns["example.com"] = ["93.184.216.34"]

    target = check_url("  HTTP://Example.COM.:80/a/b?q=1#frag\n")

    assert target == Target(
        scheme="http",
        host="example.com",
        port=80,
        address="93.184.216.34",
        url="http://example.com/a/b?q=1",
    )


def test_it_keeps_explicit_ports_and_adds_a_root_path(fake_dns: dict[str, list[str]]) -> None:
    fake_dns["example.com"] = ["93.184.216.34"]

    assert check_url("https://example.com:8443").url == "https://example.com:8443/"
    assert check_url("https://example.com:443/x").url == "https://example.com/x"


def test_it_encodes_international_names_and_paths(fake_dns: dict[str, list[str]]) -> None:
    fake_dns["xn--bcher-kva.de"] = ["93.184.216.34"]

    target = check_url("https://Bücher.de/päth?q=ä&x=%20")

    assert target.host == "xn--bcher-kva.de"
    assert target.url == "https://xn--bcher-kva.de/p%C3%A4th?q=%C3%A4&x=%20"


def test_it_formats_ipv6_literals() -> None:
    target = check_url("http://[2606:4700:4700:0::1111]:8080/x")

    assert target.host == "2606:4700:4700::1111"
    assert target.address == "2606:4700:4700::1111"
    assert target.url == "http://[2606:4700:4700::1111]:8080/x"


def test_it_requires_every_resolved_address_to_be_public(fake_dns: dict[str, list[str]]) -> None:
    fake_dns["split.test"] = ["93.184.216.34", "10.0.0.5"]

    with pytest.raises(PolicyDenied, match=r"'split.test' resolves to 10\.0\.0\.5.*private"):
        check_url("http://split.test/")


def test_it_returns_the_first_checked_address(fake_dns: dict[str, list[str]]) -> None:
    fake_dns["dual.test"] = ["2606:4700:4700::1111", "93.184.216.34"]

    assert check_url("http://dual.test/").address == "2606:4700:4700::1111"


def test_it_enforces_the_allowlist(fake_dns: dict[str, list[str]]) -> None:
    fake_dns["api.github.com"] = ["140.82.112.6"]
    fake_dns["github.com"] = ["140.82.112.3"]

    assert check_url("https://api.github.com/x", allowed_hosts=["*.github.com"]).port == 443
    with pytest.raises(PolicyDenied, match="not in the allowed hosts"):
        check_url("https://github.com/", allowed_hosts=["*.github.com"])


def test_it_lets_an_admin_allow_a_private_address() -> None:
    assert check_url("http://127.0.0.1:8000/", private_allowed=["127.0.0.1"]).port == 8000
    assert check_url("http://10.1.2.3/", private_allowed=["10.0.0.0/8"]).address == "10.1.2.3"
    assert check_url("http://[::1]/", private_allowed=["[::1]"]).host == "::1"
    with pytest.raises(PolicyDenied, match="loopback"):
        check_url("http://127.0.0.2/", private_allowed=["127.0.0.1"])


def test_it_lets_an_admin_allow_a_private_name(fake_dns: dict[str, list[str]]) -> None:
    fake_dns["intranet.local"] = ["10.0.0.7"]
    fake_dns["wiki.corp.example"] = ["192.168.4.4"]

    assert check_url("http://intranet.local/", private_allowed=["intranet.local"]).address == (
        "10.0.0.7"
    )
    assert check_url("http://wiki.corp.example/", private_allowed=["*.corp.example"]).host == (
        "wiki.corp.example"
    )
    with pytest.raises(PolicyDenied, match="private"):
        check_url("http://intranet.local/", private_allowed=["other.local"])


def test_it_never_lifts_metadata_for_a_name_only(fake_dns: dict[str, list[str]]) -> None:
    fake_dns["intranet.local"] = ["169.254.169.254"]

    with pytest.raises(PolicyDenied, match="cloud metadata"):
        check_url("http://intranet.local/", private_allowed=["intranet.local"])
    # nor for an address entry naming it (issue 20): tests/security/test_private_hosts.py
    with pytest.raises(PolicyDenied, match="cloud metadata; never allowed"):
        check_url("http://intranet.local/", private_allowed=["169.254.169.254"])


def test_it_refuses_credentials_in_the_url(fake_dns: dict[str, list[str]]) -> None:
    fake_dns["example.com"] = ["93.184.216.34"]

    with pytest.raises(PolicyDenied, match="credentials"):
        check_url("https://user:pass@example.com/")


def test_it_reports_unresolvable_names_as_a_network_failure() -> None:
    # Issue 23 B5: a name that does not resolve is not a policy verdict.
    with pytest.raises(NetworkError, match="cannot resolve host 'no-such-host.invalid'") as err:
        check_url("http://no-such-host.invalid/")
    assert not isinstance(err.value, PolicyDenied)


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("ftp://example.com/", "scheme 'ftp' is not allowed"),
        ("example.com/path", "no scheme"),
        ("http://", "no host"),
        ("http://:80/", "empty host"),
        ("http://example.com:0/", "port 0 is out of range"),
        ("http://example.com:99999/", "port 99999 is out of range"),
        ("http://example.com:8o/", "invalid port"),
        ("http://[::1/", "cannot be parsed"),
        ("http://[::1]x/", "after the IPv6 address"),
        ("http://[zz::1]/", "cannot be parsed"),
        ("http://[fe80::1%25eth0]/", "zone ids"),
        ("http://exa mple.com/", "spaces or control characters"),
        ("http://example.com/\x00", "spaces or control characters"),
        ("http://a..b/", "empty labels"),
        ("http://under$score.com/", "invalid characters"),
        ("http://example.com\\@evil/", "backslash"),
        ("http://" + "a" * 254 + "/", "longer than 253"),
    ],
)
def test_it_refuses_malformed_urls(url: str, words: str) -> None:
    with pytest.raises(PolicyDenied) as caught:
        check_url(url)

    assert words in str(caught.value)
    assert str(caught.value).startswith("URL refused: ")


def test_it_refuses_non_strings() -> None:
    with pytest.raises(PolicyDenied, match="must be a string"):
        check_url(b"http://example.com/")  # type: ignore[arg-type]
