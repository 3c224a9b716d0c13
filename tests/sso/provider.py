"""Starts the real OIDC provider of tests/oidc_provider on loopback and speaks to it the way a
browser would (its login form, its authorization endpoint), for tests that drive the app with
Django's test client rather than Chromium."""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.conftest import ROOT
from tests.helpers import wait_for

CLIENT_ID = "control-center"
CALLBACK_PATH = "/accounts/oidc/callback/"


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class OIDCProvider:
    url: str
    issuer: str
    dir: Path
    client_secret: str

    @property
    def discovery_url(self) -> str:
        return f"{self.issuer}/.well-known/openid-configuration"

    def person(self, username: str, *, password: str = "", **claims: Any) -> str:
        """Adds or replaces someone the provider knows; returns their password. Claims are
        put in the ID token as given (``groups=[...]``; leave ``groups`` out for no claim)."""
        path = self.dir / "people.json"
        people = json.loads(path.read_text())
        password = password or f"{username}-idp-password"
        people[username] = {"password": password, "claims": claims}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(people))
        tmp.replace(path)
        return password

    def app_env(self, **extra: str) -> dict[str, str]:
        """The environment that points the app at this provider."""
        return {
            "OIDC_ISSUER": self.issuer,
            "OIDC_CLIENT_ID": CLIENT_ID,
            "OIDC_CLIENT_SECRET": self.client_secret,
            **extra,
        }

    def signing_key_pem(self) -> bytes:
        return (self.dir / "key.pem").read_bytes()


@contextlib.contextmanager
def run_oidc_provider(directory: Path) -> Iterator[OIDCProvider]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    provider = OIDCProvider(
        url=url, issuer=f"{url}/o", dir=directory, client_secret=secrets.token_urlsafe(24)
    )
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (directory / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    (directory / "people.json").write_text("{}")
    config = {
        "port": port,
        "issuer": provider.issuer,
        "secret_key": secrets.token_urlsafe(40),
        "clients": [
            {
                "client_id": CLIENT_ID,
                "client_secret": provider.client_secret,
                # Any port on the loopback address (RFC 8252), and the test client's host.
                "redirect_uris": [
                    f"http://127.0.0.1{CALLBACK_PATH}",
                    f"http://testserver{CALLBACK_PATH}",
                ],
            }
        ],
    }
    (directory / "config.json").write_text(json.dumps(config))
    env = {**os.environ, "IDP_DIR": str(directory), "PYTHONUNBUFFERED": "1"}
    env["DJANGO_SETTINGS_MODULE"] = "tests.oidc_provider.settings"
    for name in ("DATABASE_URL", "REDIS_URL", "CC_VAR_DIR"):
        env.pop(name, None)
    with open(directory / "provider.log", "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.oidc_provider.serve"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for(
            lambda: proc.poll() is not None or _answers(provider.discovery_url),
            timeout=60,
            message="the OIDC provider to serve its discovery document",
        )
        assert proc.poll() is None, f"the OIDC provider exited; see {directory}/provider.log"
        yield provider
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return response.status == 200
    except OSError:
        return False


class ProviderBrowser:
    """A person at the provider: signs in on its login form and follows its redirects until
    it sends them back to the app (whose callback URL is returned, not followed)."""

    def __init__(self, provider: OIDCProvider) -> None:
        self.provider = provider
        self.session = requests.Session()

    def authorize(self, authorization_url: str, username: str, password: str) -> str:
        url = authorization_url
        for _ in range(10):
            if url.startswith(self.provider.url + "/login/"):
                url = self._sign_in(url, username, password)
                continue
            if not url.startswith(self.provider.url):
                return url  # back to the app
            response = self.session.get(url, allow_redirects=False, timeout=10)
            assert response.status_code in (301, 302), (response.status_code, response.text)
            url = urljoin(url, response.headers["Location"])
        raise AssertionError("too many redirects at the provider")

    def _sign_in(self, url: str, username: str, password: str) -> str:
        page = self.session.get(url, timeout=10)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        next_url = re.search(r'name="next" value="([^"]*)"', page.text)
        assert token and next_url, page.text
        response = self.session.post(
            url,
            data={
                "csrfmiddlewaretoken": token.group(1),
                "username": username,
                "password": password,
                "next": next_url.group(1).replace("&amp;", "&"),
            },
            allow_redirects=False,
            timeout=10,
        )
        assert response.status_code == 302, f"the provider refused the sign-in: {response.text}"
        return urljoin(url, response.headers["Location"])


def callback_path(url: str) -> str:
    """The path and query of the provider's redirect back to the app."""
    parts = urlsplit(url)
    assert parts.path == CALLBACK_PATH, url
    return f"{parts.path}?{parts.query}"
