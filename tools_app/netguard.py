"""The SSRF address guard shared by the HTTP tool and the browser tool's request router.

Library choice. No maintained Python SSRF library fits both users of this guard:
``advocate`` is archived (2023) and pins ``urllib3<2``; ``requests-hardened`` (Saleor, well
kept) checks only the first ``getaddrinfo`` answer, knows one "allow loopback" switch instead
of per-host exceptions, gives no reason for a refusal and is bound to ``requests``;
``safehttpx`` is async GET-only; Microsoft's ``AntiSSRF`` is bound to a ``requests`` Session
and only weeks old on PyPI; the httpx wrappers (drawbridge, httpx-secure, egressweave) are
young single-author projects, mostly async. The browser router needs the check without any
HTTP client at all. So classification uses the standard library's ``ipaddress`` (maintained
with CPython) plus explicit tables for what it does not flag on every supported Python
(CGNAT, NAT64, 6to4, Teredo, metadata endpoints), names are normalised with ``idna`` (UTS #46,
the package httpx2/requests already use), and the pinned connection lives in
``tools_app.executors.http.client`` on top of ``httpcore2``.

``check_url`` parses, normalises, applies the host allowlist, resolves once and returns the
checked address in a ``Target``; callers must connect to ``Target.address`` and never
resolve the name again (that second lookup is what DNS rebinding exploits).
"""

from __future__ import annotations

import fnmatch
import ipaddress
import logging
import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

import idna

from tools_app.errors import NetworkError, PolicyDenied

logger = logging.getLogger(__name__)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

ALLOWED_SCHEMES = {"http": 80, "https": 443}
MAX_HOST_LENGTH = 253

_v4 = ipaddress.IPv4Network
_v6 = ipaddress.IPv6Network

# Well-known instance metadata endpoints. Some sit inside ranges that are blocked anyway,
# but naming them gives a clearer refusal, and Azure's wire server is a public address.
_METADATA_ADDRESSES = {
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, ...
        "169.254.170.2",  # AWS ECS task metadata
        "169.254.169.253",  # AWS VPC DNS
        "169.254.169.123",  # AWS time sync
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud
        "168.63.129.16",  # Azure wire server
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "fd00:ec2::23",  # AWS DNS over IPv6
    )
}

# Order matters: the first match names the reason.
_V4_TABLE: list[tuple[ipaddress.IPv4Network, str]] = [
    (_v4("0.0.0.0/32"), "unspecified"),
    (_v4("0.0.0.0/8"), "reserved (this network)"),
    (_v4("127.0.0.0/8"), "loopback"),
    (_v4("10.0.0.0/8"), "private"),
    (_v4("172.16.0.0/12"), "private"),
    (_v4("192.168.0.0/16"), "private"),
    (_v4("100.64.0.0/10"), "shared address space (CGNAT)"),
    (_v4("169.254.0.0/16"), "link-local"),
    (_v4("192.0.0.0/24"), "reserved (IETF protocol assignments)"),
    (_v4("192.0.2.0/24"), "documentation"),
    (_v4("198.51.100.0/24"), "documentation"),
    (_v4("203.0.113.0/24"), "documentation"),
    (_v4("192.88.99.0/24"), "reserved (6to4 relay anycast)"),
    (_v4("198.18.0.0/15"), "benchmarking"),
    (_v4("224.0.0.0/4"), "multicast"),
    (_v4("255.255.255.255/32"), "broadcast"),
    (_v4("240.0.0.0/4"), "reserved"),
]

_V6_TABLE: list[tuple[ipaddress.IPv6Network, str]] = [
    (_v6("::/128"), "unspecified"),
    (_v6("::1/128"), "loopback"),
    (_v6("::ffff:0:0:0/96"), "reserved (IPv4-translated)"),
    (_v6("100::/64"), "reserved (discard-only)"),
    (_v6("2001::/32"), "teredo"),
    (_v6("2001:2::/48"), "benchmarking"),
    (_v6("2001:10::/28"), "reserved (ORCHID)"),
    (_v6("2001:20::/28"), "reserved (ORCHIDv2)"),
    (_v6("2001:db8::/32"), "documentation"),
    (_v6("3fff::/20"), "documentation"),
    (_v6("5f00::/16"), "reserved (segment routing)"),
    (_v6("fc00::/7"), "unique-local"),
    (_v6("fe80::/10"), "link-local"),
    (_v6("fec0::/10"), "site-local"),
    (_v6("ff00::/8"), "multicast"),
]

_MAPPED = _v6("::ffff:0:0/96")
_COMPATIBLE = _v6("::/96")
_NAT64 = _v6("64:ff9b::/96")
_NAT64_LOCAL = _v6("64:ff9b:1::/48")
_SIX_TO_FOUR = _v6("2002::/16")
_GLOBAL_UNICAST = _v6("2000::/3")

# Reasons that an exception by host *name* never lifts: a name an admin trusts could still be
# pointed at these by whoever controls its DNS. Only an explicit IP/CIDR entry allows them.
_NEVER_BY_NAME = ("unspecified", "multicast", "broadcast")
# And one no entry lifts: the credentials of the machine itself. An address entry is checked
# against it too, so "169.254.0.0/16" (or the address itself) cannot open it by the way.
_NEVER = "cloud metadata"

_LABEL = re.compile(r"^[a-z0-9_-]{1,63}$")
_FORBIDDEN_URL_CHARS = re.compile(r"[\x00-\x20\x7f]")


@dataclass(frozen=True)
class Target:
    """A checked destination. ``address`` is the IP to connect to; ``host`` is for the Host
    header and TLS (SNI and certificate checks); ``url`` is normalised, without userinfo or
    fragment."""

    scheme: str
    host: str
    port: int
    address: str
    url: str


def classify_address(ip: str) -> str | None:
    """Why ``ip`` must not be reached, or None when it is a public unicast address.

    Raises ValueError when ``ip`` is not an IP address (a zone id such as ``%eth0`` is
    dropped first; the address part decides).
    """
    addr = ipaddress.ip_address(ip.split("%", 1)[0])
    if addr in _METADATA_ADDRESSES:
        return "cloud metadata"
    if isinstance(addr, ipaddress.IPv4Address):
        return _classify_v4(addr)
    return _classify_v6(addr)


def _classify_v4(addr: ipaddress.IPv4Address) -> str | None:
    for network, reason in _V4_TABLE:
        if addr in network:
            return reason
    # The stdlib follows the IANA special-purpose registry; catch whatever it knows that the
    # table above does not.
    return None if addr.is_global else "reserved"


def _embedded(addr: ipaddress.IPv6Address, prefix: str) -> str | None:
    v4 = ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF)
    reason = classify_address(str(v4))
    return f"{prefix} {reason}" if reason else None


def _classify_v6(addr: ipaddress.IPv6Address) -> str | None:
    # IPv6 forms that carry an IPv4 address are judged by that address: ::ffff:127.0.0.1
    # reaches the same socket as 127.0.0.1 on a dual-stack host.
    if addr in _MAPPED:
        return _embedded(addr, "IPv4-mapped")
    for network, reason in _V6_TABLE:
        if addr in network:
            return reason
    if addr in _COMPATIBLE:
        # Deprecated (RFC 4291) and never legitimately routed: refuse even if the embedded
        # address is public.
        return _embedded(addr, "IPv4-compatible") or "reserved (IPv4-compatible)"
    if addr in _NAT64:
        return _embedded(addr, "NAT64 of")
    if addr in _NAT64_LOCAL:
        # Local-use translation prefix (RFC 8215): only a local operator's translator
        # answers it, so it is refused whatever it embeds.
        return _embedded(addr, "NAT64 of") or "NAT64 (local-use prefix)"
    if addr in _SIX_TO_FOUR:
        v4 = addr.sixtofour
        assert v4 is not None
        inner = classify_address(str(v4))
        return f"6to4 of {inner}" if inner else None
    if addr not in _GLOBAL_UNICAST:
        return "reserved"
    return None if addr.is_global else "reserved"


def normalise_host(host: str) -> str:
    """Lower-case, IDNA (UTS #46) encode and strip one trailing dot; IP literals are returned
    in canonical form without brackets. Raises ValueError when ``host`` is not a valid name."""
    host = host.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if "%" in host:
        raise ValueError("percent signs (encoded characters or IPv6 zone ids) are not allowed")
    if not host.isascii():
        try:
            host = idna.encode(host, uts46=True, transitional=False).decode("ascii")
        except idna.IDNAError as exc:
            raise ValueError(f"invalid internationalised host name: {exc}") from exc
    host = host.lower()
    if host.endswith("."):
        host = host[:-1]
    if not host:
        raise ValueError("empty host")
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    if len(host) > MAX_HOST_LENGTH:
        raise ValueError(f"host name longer than {MAX_HOST_LENGTH} characters")
    if not all(_LABEL.match(label) for label in host.split(".")):
        raise ValueError("host name has invalid characters or empty labels")
    return host


def _normalise_pattern(pattern: str) -> str:
    pattern = pattern.strip().lower()
    if pattern.endswith("."):
        pattern = pattern[:-1]
    if not pattern.isascii():
        labels = pattern.split(".")
        encoded = [
            label if "*" in label else idna.encode(label, uts46=True).decode("ascii")
            for label in labels
        ]
        pattern = ".".join(encoded)
    try:
        return str(ipaddress.ip_address(pattern.strip("[]")))
    except ValueError:
        return pattern


def host_matches(host: str, patterns: Sequence[str]) -> bool:
    """Whether ``host`` matches one of the glob ``patterns`` (case-insensitive, IDNA-normalised,
    trailing dots ignored).

    ``*`` alone matches every host. A leading ``*.`` matches one or more labels, so
    ``*.github.com`` matches ``api.github.com`` and ``a.b.github.com`` but NOT ``github.com``
    itself (list both to allow both). Other labels are matched one label at a time with
    shell-style wildcards (``api-*.example.com``), so a ``*`` never crosses a dot. IP literals
    match an equal IP pattern or a CIDR pattern that contains them.
    """
    try:
        host = normalise_host(host)
    except ValueError:
        return False
    host_ip = _as_ip(host)
    for raw in patterns:
        try:
            pattern = _normalise_pattern(raw)
        except (ValueError, idna.IDNAError):
            logger.warning("ignoring invalid host pattern %r", raw)
            continue
        if not pattern:
            continue
        if pattern == "*":
            return True
        if host_ip is not None:
            if "/" in pattern:
                try:
                    if host_ip in ipaddress.ip_network(pattern, strict=False):
                        return True
                except ValueError:
                    pass
            elif pattern == host:
                return True
            continue
        if _labels_match(host.split("."), pattern.split(".")):
            return True
    return False


def _labels_match(host: list[str], pattern: list[str]) -> bool:
    if pattern[0] == "*" and len(pattern) > 1:
        rest = pattern[1:]
        if len(host) <= len(rest):
            return False
        host = host[len(host) - len(rest) :]
        pattern = rest
    if len(host) != len(pattern):
        return False
    return all(fnmatch.fnmatchcase(h, p) for h, p in zip(host, pattern, strict=True))


def _as_ip(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _deny(message: str) -> PolicyDenied:
    return PolicyDenied(f"URL refused: {message}")


@dataclass(frozen=True)
class _Parsed:
    scheme: str
    host: str
    port: int
    target: str  # path and query, ready for the request line
    has_userinfo: bool


def _parse(url: str) -> _Parsed:
    if not isinstance(url, str):
        raise _deny("the URL must be a string")
    # Leading/trailing blanks are forgiven as a browser would; anything else below 0x21 is
    # refused because parsers disagree about it (urllib silently deletes tabs and newlines).
    url = url.strip(" \t\r\n\f\v")
    if _FORBIDDEN_URL_CHARS.search(url):
        raise _deny("the URL contains spaces or control characters")
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise _deny(f"the URL cannot be parsed ({exc})") from exc
    scheme = parts.scheme.lower()
    if not scheme:
        raise _deny("the URL has no scheme; write http:// or https://")
    if scheme not in ALLOWED_SCHEMES:
        raise _deny(f"scheme {scheme!r} is not allowed; only http and https are")
    netloc = parts.netloc
    if not netloc:
        raise _deny("the URL has no host")
    if "\\" in netloc:
        # WHATWG parsers treat a backslash as '/', urllib does not: refuse the ambiguity.
        raise _deny("the URL authority contains a backslash")
    userinfo, at, hostport = netloc.rpartition("@")
    host, port = _split_host_port(hostport)
    try:
        host = normalise_host(host)
    except ValueError as exc:
        shown = host if len(host) <= 60 else host[:57] + "..."
        raise _deny(f"invalid host {shown!r}: {exc}") from exc
    if port is None:
        port = ALLOWED_SCHEMES[scheme]
    target = quote(parts.path or "/", safe="/%:@!$&'()*+,;=-._~")
    if parts.query:
        target += "?" + quote(parts.query, safe="/%:@!$&'()*+,;=-._~?")
    return _Parsed(scheme, host, port, target, has_userinfo=bool(at))


def _split_host_port(hostport: str) -> tuple[str, int | None]:
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0:
            raise _deny("unterminated IPv6 address in the URL")
        host, rest = hostport[: end + 1], hostport[end + 1 :]
        if rest and not rest.startswith(":"):
            raise _deny("unexpected characters after the IPv6 address")
        port_text = rest[1:] if rest else ""
        if _as_ip(host[1:-1].split("%", 1)[0]) is None:
            raise _deny(f"invalid IPv6 address {host!r}")
    else:
        host, colon, port_text = hostport.partition(":")
        if ":" in port_text:
            raise _deny("IPv6 addresses must be written in brackets")
    if not port_text:
        return host, None
    if not port_text.isdigit() or len(port_text) > 5:
        raise _deny(f"invalid port {port_text!r}")
    port = int(port_text)
    if not 1 <= port <= 65535:
        raise _deny(f"port {port} is out of range (1-65535)")
    return host, port


class _PrivateAllowance:
    """The admin's explicit exceptions: IP/CIDR entries allow addresses, other entries are host
    patterns that allow whatever their name resolves to (minus ``_NEVER_BY_NAME``); neither
    allows a metadata address."""

    def __init__(self, entries: Sequence[str]) -> None:
        self.networks: list[IPNetwork] = []
        self.hosts: list[str] = []
        for entry in entries:
            text = entry.strip().strip("[]")
            if not text:
                continue
            try:
                self.networks.append(ipaddress.ip_network(text, strict=False))
            except ValueError:
                self.hosts.append(text)

    def permits(self, host: str, addr: IPAddress, reason: str) -> bool:
        if reason.endswith(_NEVER):
            return False
        if any(addr.version == n.version and addr in n for n in self.networks):
            return True
        if reason.endswith(_NEVER_BY_NAME):
            return False
        return bool(self.hosts) and host_matches(host, self.hosts)


def _resolve(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        # Not a verdict: the name may resolve in a minute. Policy judges addresses it knows.
        raise NetworkError(f"cannot resolve host {host!r} ({exc})") from exc
    addresses: list[str] = []
    for family, _type, _proto, _canon, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        address = str(sockaddr[0]).split("%", 1)[0]
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise NetworkError(f"host {host!r} has no IPv4 or IPv6 address")
    return addresses


def check_url(
    url: str,
    *,
    allowed_hosts: Sequence[str] = (),
    private_allowed: Sequence[str] = (),
) -> Target:
    """Parse, normalise and check ``url``; return the address to connect to.

    ``allowed_hosts``: glob patterns (see ``host_matches``); empty means any public host.
    ``private_allowed``: hosts, IPs or CIDRs an admin explicitly allows although they are not
    public (e.g. ``127.0.0.1`` for a local service, ``intranet.local``, ``10.1.0.0/16``).
    Host names in it lift every reason except metadata, unspecified, multicast and broadcast;
    IP/CIDR entries lift every reason except metadata, which nothing lifts. It does not
    bypass a non-empty ``allowed_hosts``.
    Every resolved address must pass, or the URL is refused: a name answering with one public
    and one private address is refused, since the connection could land on either.
    Raises PolicyDenied with the reason; NetworkError when the name does not resolve (a
    network failure, not a verdict: nothing was refused).
    """
    parsed = _parse(url)
    host = parsed.host
    if allowed_hosts and not host_matches(host, allowed_hosts):
        raise _deny(f"host {host!r} is not in the allowed hosts ({', '.join(allowed_hosts)})")
    literal = _as_ip(host)
    addresses = [host] if literal is not None else _resolve(host, parsed.port)
    allowance = _PrivateAllowance(private_allowed)
    for address in addresses:
        reason = classify_address(address)
        if reason is None or allowance.permits(host, ipaddress.ip_address(address), reason):
            continue
        where = address if literal is not None else f"{host!r} resolves to {address}, which"
        remedy = "never allowed" if reason.endswith(_NEVER) else "an admin must allow it explicitly"
        raise _deny(f"{where} is not a public address: {reason}; {remedy}")
    if parsed.has_userinfo:
        raise _deny("credentials in the URL are not allowed; send an Authorization header")
    url_host = f"[{host}]" if ":" in host else host
    default = ALLOWED_SCHEMES[parsed.scheme] == parsed.port
    netloc = url_host if default else f"{url_host}:{parsed.port}"
    return Target(
        scheme=parsed.scheme,
        host=host,
        port=parsed.port,
        address=addresses[0],
        url=f"{parsed.scheme}://{netloc}{parsed.target}",
    )
