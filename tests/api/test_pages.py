"""The pages of the programmatic surface: the Tokens page chooses and edits scopes and rate
limits (never beyond what the person may hold), the command makes a token with every scope
the person may hold, and the Webhooks pages are for admins and show a secret once."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from platform_app.api_tokens import api_token_verify
from platform_app.models import WebhookEndpoint
from tools_app.models import ApiToken


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_member_chooses_scopes_and_a_rate_limit_and_edits_them(user: Any) -> None:
    client = _client(user)
    page = client.get("/tokens/").content.decode()
    # A new token starts with the least scope ticked (issue 39): the person adds the rest.
    assert 'value="read" checked' in page and 'value="chat" checked' not in page
    assert 'value="tools:admin"' not in page

    client.post(
        "/tokens/",
        {"name": "ci", "scopes_shown": "1", "scopes": ["read", "chat"], "rate_limit": "30"},
    )
    token = ApiToken.objects.get(name="ci")
    assert token.scopes == ["chat", "read"] and token.rate_limit_per_minute == 30
    assert not token.trace

    edited = {"scopes": ["read", "approve"], "rate_limit": "", "trace": "on"}
    client.post(f"/tokens/{token.pk}/edit/", edited)
    token.refresh_from_db()
    assert token.scopes == ["read", "approve"] and token.rate_limit_per_minute is None
    assert token.trace
    page = client.get("/tokens/").content.decode()
    assert "120 requests/min" in page  # the default, shown


@pytest.mark.parametrize(
    ("posted", "refusal"),
    [
        ({"scopes": ["read", "tools:admin"]}, "only admins may hold the &#x27;tools:admin&#x27;"),
        ({"scopes": ["read", "root"]}, "unknown scope &#x27;root&#x27;"),
        ({"scopes": []}, "choose at least one scope"),
        ({"scopes": ["read"], "rate_limit": "999999999"}, "between 1 and 10,000"),
        ({"scopes": ["read"], "rate_limit": "-1"}, "must be a whole number"),
    ],
)
def test_the_tokens_page_refuses_what_a_member_may_not_hold(
    user: Any, posted: dict[str, Any], refusal: str
) -> None:
    client = _client(user)
    page = client.post("/tokens/", {"name": "x", "scopes_shown": "1", **posted})
    assert page.status_code == 400 and refusal in page.content.decode()
    assert not ApiToken.objects.exists()


def test_a_member_cannot_edit_someone_elses_token(user: Any, other_user: Any) -> None:
    client = _client(other_user)
    _client(user).post("/tokens/", {"name": "mine", "scopes_shown": "1", "scopes": ["read"]})
    token = ApiToken.objects.get()
    client.post(f"/tokens/{token.pk}/edit/", {"scopes": ["read", "chat"]}, follow=True)
    token.refresh_from_db()
    assert token.scopes == ["read"]


def test_the_command_gives_every_scope_the_person_may_hold_unless_told(
    user: Any, staff_user: Any
) -> None:
    out = io.StringIO()
    call_command("api_tokens", "create", user.username, stdout=out, stderr=io.StringIO())
    member = api_token_verify(out.getvalue().strip())
    assert member is not None
    assert member.scopes == ["chat", "read", "write", "approve", "mcp"]
    out = io.StringIO()
    call_command("api_tokens", "create", staff_user.username, stdout=out, stderr=io.StringIO())
    assert api_token_verify(out.getvalue().strip()).scopes[-2:] == ["tools:admin", "audit"]
    out = io.StringIO()
    call_command(
        "api_tokens", "create", user.username, "--scope", "mcp", "--rate-limit", "5",
        stdout=out, stderr=io.StringIO(),
    )  # fmt: skip
    narrow = api_token_verify(out.getvalue().strip())
    assert narrow.scopes == ["mcp"] and narrow.rate_limit_per_minute == 5
    listing = io.StringIO()
    call_command("api_tokens", "list", user.username, stdout=listing)
    assert "\tmcp\tactive\t" in listing.getvalue()


def test_existing_tokens_keep_only_mcp_when_migrating(user: Any) -> None:
    import importlib

    from django.apps import apps

    from platform_app.api_tokens import api_token_create

    token, _ = api_token_create(user=user, name="old")
    ApiToken.objects.update(scopes=[])  # as every row was before the field existed
    importlib.import_module("tools_app.migrations.0014_api_token_scopes").scopes_as_before(
        apps, None
    )
    token.refresh_from_db()
    assert token.scopes == ["mcp"]


def test_the_webhooks_pages_are_for_admins_and_show_the_secret_once(
    user: Any, staff_user: Any
) -> None:
    assert _client(user).get("/webhooks/").status_code == 403
    admin = _client(staff_user)
    added = admin.post(
        "/webhooks/",
        {"name": "n8n", "url": "https://hooks.example.com/cc", "events": ["turn.finished"]},
        follow=True,
    )
    endpoint = WebhookEndpoint.objects.get()
    page = added.content.decode()
    assert endpoint.secret.startswith("whsec_") and endpoint.secret in page
    assert added.headers["Cache-Control"] == "no-store"
    again = admin.get(f"/webhooks/{endpoint.pk}/").content.decode()
    assert endpoint.secret not in again and "Nothing delivered yet" in again
    assert _client(user).post(f"/webhooks/{endpoint.pk}/delete/").status_code == 403
    refused = admin.post("/webhooks/", {"url": "ftp://x/", "events": ["turn.finished"]})
    assert refused.status_code == 400 and "must be http" in refused.content.decode()
    refused = admin.post("/webhooks/", {"url": "https://u:p@x.example/", "events": ["ping"]})
    assert refused.status_code == 400
    admin.post(f"/webhooks/{endpoint.pk}/rotate/")
    old = endpoint.secret
    endpoint.refresh_from_db()
    assert endpoint.secret != old
    admin.post(f"/webhooks/{endpoint.pk}/delete/")
    assert not WebhookEndpoint.objects.exists()
