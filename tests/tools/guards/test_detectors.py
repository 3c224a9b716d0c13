"""The detectors on their own: detect-secrets' plugins as the guards use them, the limits on
the high-entropy ones, and the PII checks (Luhn, mod 97)."""

from __future__ import annotations

import logging
import time

import pytest

from tools_app.guards.pii import find_pii, iban_valid, luhn_valid
from tools_app.guards.scan import SCAN_MAX_CHARS, scan
from tools_app.guards.secrets import find_secrets

AWS = "AKIAIOSFODNN7EXAMPLE"
GITHUB = "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"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)


def kinds(text: str) -> list[tuple[str, str]]:
    return [(m.kind, text[m.start : m.end]) for m in find_secrets(text)]


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        (f"key={AWS};", "AWS Access Key", AWS),
        (f"token {GITHUB} end", "GitHub Token", GITHUB),
        (
            "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
            "Stripe Access Key",
            "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
        ),
        (
            "xoxb-123456789012-1234567890123-abcdefghijklmnopqrstuvwx",
            "Slack Token",
            "xoxb-123456789012-1234567890123-abcdefghijklmnopqrstuvwx",
        ),
        (f"Bearer {JWT}", "JSON Web Token", JWT),
        (
            "https://bob:correct-horse-battery@db.example/x",
            "Basic Auth Credentials",
            "correct-horse-battery",
        ),
    ],
)
def test_it_finds_each_provider_s_key(text: str, kind: str, value: str) -> None:
    assert kinds(text) == [(kind, value)]


def test_it_finds_a_whole_private_key() -> None:
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"
    assert kinds(f"here:\n{key}\nbye") == [("Private Key", key)]


def test_it_takes_a_random_token_for_a_secret_but_not_digests_or_prose() -> None:
    token = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1u"
    assert kinds(f"token: {token}")[0][0] == "Base64 High Entropy String"
    assert kinds("commit 3f786850e387550fdab836ed7e6dc881de23001b") == []  # SHA-1
    digest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert kinds(f"sha256:{digest}") == []  # SHA-256
    assert kinds("id 9f86d081884c7d659a2feaa0c55ad015 md5") == []  # MD5, an undashed UUID
    assert kinds("key 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b") != []  # 42 hex characters
    assert kinds("/workspace/src/controlcenter/settings.py and some ordinary words") == []


def test_luhn_and_mod_97() -> None:
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")
    assert iban_valid("GB82 WEST 1234 5698 7654 32") and not iban_valid("GB82WEST12345698765433")


def test_it_finds_personal_data_and_leaves_dates_and_addresses() -> None:
    text = (
        "mail alice@example.org, call +44 20 7946 0958, card 4111 1111 1111 1111, "
        "iban DE89 3704 0044 0532 0130 00; on 2024-01-15 from 192.168.100.200; "
        "card 4111 1111 1111 1112 is not one"
    )
    assert [m.kind for m in find_pii(text)] == [
        "Email Address",
        "Phone Number",
        "Payment Card Number",
        "IBAN",
    ]


def test_scan_walks_json_redacts_and_says_where() -> None:
    value = {"headers": {"X-Key": f"use {AWS}"}, "items": ["short", {"note": f"t {GITHUB}"}]}
    result = scan(value, root="arguments", detectors={"secrets": find_secrets}, redact={"secrets"})
    assert result.value == {
        "headers": {"X-Key": "use [REDACTED:AWS Access Key]"},
        "items": ["short", {"note": "t [REDACTED:GitHub Token]"}],
    }
    assert [(f.kind, f.where) for f in result.found] == [
        ("AWS Access Key", "arguments.headers.X-Key"),
        ("GitHub Token", "arguments.items[1].note"),
    ]


def test_scan_stops_at_its_cap() -> None:
    value = {"a": "x" * SCAN_MAX_CHARS, "b": f"key {AWS}"}
    result = scan(value, root="result", detectors={"secrets": find_secrets}, redact={"secrets"})
    assert result.capped and result.found == []  # documented: beyond the cap, unscanned


def test_the_cost_of_a_scan_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    """Measured, not asserted: one typical result (a 20 kB page with one key)."""
    page = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 350) + AWS
    value = {"success": True, "status": 200, "text": page, "headers": {"server": "x"}}
    detectors = {"secrets": find_secrets, "pii": find_pii}
    scan(value, root="result", detectors=detectors, redact={"secrets"})  # warm the plugins
    rounds = 20
    started = time.perf_counter()
    for _ in range(rounds):
        scan(value, root="result", detectors=detectors, redact={"secrets"})
    per_call = (time.perf_counter() - started) / rounds * 1000
    with caplog.at_level(logging.INFO):
        logging.getLogger(__name__).info(
            "guard scan of a %d-character result: %.2f ms per call", len(page), per_call
        )
    print(f"guard scan of a {len(page)}-character result: {per_call:.2f} ms per call")
