"""API tokens: stored hashed, shown once, revocable, rate-limited; the Tokens page."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client, override_settings

from platform_app.api_tokens import (
    api_token_create,
    api_token_hit,
    api_token_revoke,
    api_token_verify,
    token_hash,
)
from tools_app.models import ApiToken


@pytest.mark.django_db
def test_only_a_hash_of_the_token_is_stored(user: Any) -> None:
    token, raw = api_token_create(user=user, name="n")
    stored = ApiToken.objects.get(pk=token.pk)
    assert raw.startswith("cc_") and raw not in str(stored.__dict__)
    assert stored.token_hash == token_hash(raw) and stored.prefix == raw[:10]
    assert api_token_verify(raw) == token
    assert api_token_verify(raw + "x") is None


@pytest.mark.django_db
def test_a_user_cannot_revoke_someone_elses_token(user: Any, other_user: Any) -> None:
    from platform_app.api_tokens import TokenError

    token, raw = api_token_create(user=user, name="n")
    with pytest.raises(TokenError):
        api_token_revoke(token_id=token.pk, user=other_user)
    api_token_revoke(token_id=token.pk, user=user)
    assert api_token_verify(raw) is None


@pytest.mark.django_db
@override_settings(API_RATE_LIMIT_PER_MINUTE=2)
def test_requests_beyond_the_rate_limit_wait(user: Any) -> None:
    token, _ = api_token_create(user=user, name="n")
    assert api_token_hit(token) == 0
    assert api_token_hit(token) == 0
    wait = api_token_hit(token)
    assert 1 <= wait <= 60


@pytest.mark.django_db
def test_the_tokens_page_shows_a_new_token_once_with_a_client_snippet(user: Any) -> None:
    client = Client()
    client.force_login(user)
    response = client.post("/tokens/", {"name": "laptop"})
    page = response.content.decode()
    token = ApiToken.objects.get(user=user)
    raw = page.split('id="new-token">')[1].split("<")[0]
    assert raw.startswith(token.prefix) and api_token_verify(raw) == token
    assert '"url": "http://testserver/mcp/"' in page
    again = client.get("/tokens/").content.decode()
    assert raw not in again and f"{token.prefix}…" in again
    client.post(f"/tokens/{token.pk}/revoke/")
    assert ApiToken.objects.get(pk=token.pk).revoked_at is not None
