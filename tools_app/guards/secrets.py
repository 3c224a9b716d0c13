"""Finding secrets in strings with detect-secrets (Yelp's detector), its plugins used one by one
on the strings of a call's arguments or result, never on files.

The provider plugins (AWS, GitHub, GitLab, Slack, Stripe, OpenAI, …), private keys, JWTs and
basic-auth in URLs match a known shape. The high-entropy plugins catch what has no known shape
(a random token) and are limited so that ordinary data is not taken for a secret: only runs of
at least ``ENTROPY_MIN_LENGTH`` characters, and never a hex run exactly as long as an MD5,
SHA-1, SHA-256 or SHA-512 digest or an undashed UUID (commit ids, image ids, checksums and
request ids are everywhere in tool arguments and results).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

ENTROPY_MIN_LENGTH = 24
BASE64_ENTROPY_LIMIT = 4.5  # detect-secrets' own defaults
HEX_ENTROPY_LIMIT = 3.0
_DIGEST_LENGTHS = {32, 40, 64, 128}  # MD5 and UUIDs, SHA-1, SHA-256, SHA-512 in hex
_PRIVATE_KEY_BLOCK = re.compile(
    r"-----BEGIN[A-Z ]*PRIVATE KEY( BLOCK)?-----.*?(-----END[A-Z ]*PRIVATE KEY( BLOCK)?-----|\Z)",
    re.DOTALL,
)

_JWT = re.compile(r"eyJ[A-Za-z0-9_=-]+\.[A-Za-z0-9_=-]+\.[A-Za-z0-9_.+/=-]*")


@dataclass(frozen=True)
class Match:
    kind: str  # detect-secrets' secret type, e.g. "AWS Access Key"
    start: int
    end: int


# detect-secrets is imported where it is used, not with this module: its plugins bring in
# requests and its whole scanner (~18 MiB), which a server carries only once a guard scans.
@cache
def _shape_plugins() -> tuple[Any, ...]:
    from detect_secrets.plugins.artifactory import ArtifactoryDetector
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.basic_auth import BasicAuthDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.npm import NpmDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

    return (
        AWSKeyDetector(),
        GitHubTokenDetector(),
        GitLabTokenDetector(),
        SlackDetector(),
        StripeDetector(),
        OpenAIDetector(),
        SendGridDetector(),
        TwilioKeyDetector(),
        MailchimpDetector(),
        NpmDetector(),
        PypiTokenDetector(),
        DiscordBotTokenDetector(),
        TelegramBotTokenDetector(),
        SquareOAuthDetector(),
        AzureStorageKeyDetector(),
        ArtifactoryDetector(),
        BasicAuthDetector(),
    )


@cache
def _entropy_plugins() -> tuple[Any, ...]:
    from detect_secrets.plugins.high_entropy_strings import (
        Base64HighEntropyString,
        HexHighEntropyString,
    )

    return (
        Base64HighEntropyString(limit=BASE64_ENTROPY_LIMIT),
        HexHighEntropyString(limit=HEX_ENTROPY_LIMIT),
    )


def _spans(text: str, value: str) -> Iterator[tuple[int, int]]:
    start = text.find(value)
    while start != -1 and value:
        yield start, start + len(value)
        start = text.find(value, start + len(value))


def find_secrets(text: str, *, entropy: bool = True) -> list[Match]:
    """Where secrets stand in ``text``, by kind; overlapping finds are merged, the first
    naming them, and a high-entropy run that holds a known shape is left to the shape."""
    from detect_secrets.plugins.high_entropy_strings import HexHighEntropyString
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector

    found: list[Match] = []
    private = PrivateKeyDetector.secret_type
    for block in _PRIVATE_KEY_BLOCK.finditer(text):  # the whole key, not its first line
        found.append(Match(private, block.start(), block.end()))
    for plugin in _shape_plugins():
        kind = plugin.secret_type
        for regex in plugin.denylist:
            for m in regex.finditer(text):
                start, end = m.span()
                # The pattern's last group is the secret when it is one (a password in a URL,
                # an AWS secret after its name); a short group is a prefix (ghp_): the whole.
                if m.lastindex and m.end(m.lastindex) - m.start(m.lastindex) >= 12:
                    start, end = m.span(m.lastindex)
                found.append(Match(kind, start, end))
    for m in _JWT.finditer(text):  # its plugin's pattern stops short of the signature
        if JwtTokenDetector.is_formally_valid(m.group()):
            found.append(Match(JwtTokenDetector.secret_type, *m.span()))
    shaped = list(found)
    if entropy:
        for plugin in _entropy_plugins():
            hexadecimal = isinstance(plugin, HexHighEntropyString)
            with plugin.non_quoted_string_regex(is_exact_match=False):
                values = set(plugin.analyze_string(text))
            for value in values:
                if len(value) < ENTROPY_MIN_LENGTH:
                    continue
                if hexadecimal and len(value) in _DIGEST_LENGTHS:
                    continue
                if plugin.calculate_shannon_entropy(value) <= plugin.entropy_limit:
                    continue
                for start, end in _spans(text, value):
                    # A known shape inside the run names it better ("AWS Access Key").
                    if not any(s.start < end and start < s.end for s in shaped):
                        found.append(Match(plugin.secret_type, start, end))
    return _merged(found)


def _merged(found: list[Match]) -> list[Match]:
    out: list[Match] = []
    for m in sorted(found, key=lambda m: (m.start, -(m.end - m.start))):
        if out and m.start <= out[-1].end:
            last = out[-1]
            out[-1] = Match(last.kind, last.start, max(last.end, m.end))
        else:
            out.append(m)
    return out
