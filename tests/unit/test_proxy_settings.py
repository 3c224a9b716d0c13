"""Behind the balancer: X-Forwarded-Proto is trusted only where TRUST_X_FORWARDED_PROTO says
every request comes through a proxy that sets it; cookies are Secure only when asked."""

from __future__ import annotations

import pytest
from django.test import Client, override_settings

from tests.helpers import settings_in

SHOW = "getattr(settings, 'SECURE_PROXY_SSL_HEADER', None), settings.SESSION_COOKIE_SECURE"


def test_the_forwarded_proto_is_not_trusted_by_default(tmp_path):
    loaded = settings_in(tmp_path, show=SHOW)
    assert loaded.stdout.strip().splitlines()[-1] == "None False", loaded.stderr


def test_trusting_the_proxy_and_secure_cookies_are_opt_in(tmp_path):
    loaded = settings_in(tmp_path, show=SHOW, TRUST_X_FORWARDED_PROTO="1", SECURE_COOKIES="1")
    last = loaded.stdout.strip().splitlines()[-1]
    assert last == "('HTTP_X_FORWARDED_PROTO', 'https') True", loaded.stderr


@pytest.mark.django_db
def test_a_client_claiming_https_is_not_believed_unless_the_proxy_is_trusted(settings):
    # An attacker reaching a web process directly sends the header itself: without the setting
    # nothing changes; with it (only the proxy reaches web) the request counts as HTTPS.
    client = Client()
    plain = client.get("/healthz/live", HTTP_X_FORWARDED_PROTO="https")
    assert plain.wsgi_request.is_secure() is False
    with override_settings(SECURE_PROXY_SSL_HEADER=("HTTP_X_FORWARDED_PROTO", "https")):
        behind = client.get("/healthz/live", HTTP_X_FORWARDED_PROTO="https")
        assert behind.wsgi_request.is_secure() is True
        direct = client.get("/healthz/live")
        assert direct.wsgi_request.is_secure() is False
