"""Issue 20, finding 4: the Django admin showed decrypted secrets (the search API key, MCP
headers and bearer, OpenAPI key) on the change pages of tool-group configs and tool sources.

A known secret is stored on every model that holds one, then every page the admin has for
every registered model with a row (changelist, change, history, delete confirmation) is
fetched as a superuser: none may contain a secret's text."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.apps import apps
from django.contrib import admin
from django.test import Client
from django.urls import reverse

from infra.secrets import EncryptedTextField

PAGES = ("changelist", "change", "history", "delete")


def secret(name: str) -> str:
    return f"sk-leak-{name}-7f3a9c1e5b"


@pytest.fixture
def secrets_everywhere(staff_user: Any, user: Any) -> list[str]:
    """Every credential the app stores, set through the path that sets it in production where
    there is one; the plain texts that must never reach a page."""
    from chat_app.models import Agent, Conversation, Message, Provider
    from platform_app.api_tokens import api_token_create
    from platform_app.webhooks.services import endpoint_create
    from tools_app.models import ToolSource
    from tools_app.services.settings import group_settings_save

    provider = Provider.objects.create(
        name="leaky", model="m", base_url="http://127.0.0.1:9/v1", api_key=secret("provider")
    )
    agent = Agent.objects.create(name="leaky agent", provider=provider)
    conversation = Conversation.objects.create(owner=user, provider=provider, agent=agent)
    Message.objects.create(conversation=conversation, role=Message.Role.USER, content="hi")
    group_settings_save(
        user=staff_user, group="research", values={"search_api_key": secret("search")}
    )
    ToolSource.objects.create(
        kind=ToolSource.Kind.MCP,
        name="leaky-mcp",
        config={"transport": "http", "url": "http://127.0.0.1:9/mcp"},
        secrets=json.dumps(
            {"headers": {"X-Api-Key": secret("mcp-header")}, "bearer": secret("mcp-bearer")}
        ),
    )
    ToolSource.objects.create(
        kind=ToolSource.Kind.OPENAPI,
        name="leaky-api",
        config={"auth": {"kind": "header", "name": "X-Key"}},
        secrets=json.dumps({"value": secret("openapi")}),
    )
    from tools_app.models import ConnectAttempt, SourceConnection, SourceOAuthClient

    person_source = ToolSource.objects.get(name="leaky-mcp")
    SourceConnection.objects.create(
        user=user,
        source=person_source,
        kind="oauth",
        account="leaky",
        secrets=json.dumps({"access_token": secret("person-token")}),
    )
    SourceOAuthClient.objects.create(source=person_source, client_secret=secret("oauth-client"))
    ConnectAttempt.objects.create(
        state_hash="0" * 64,
        user=user,
        session_hash="1" * 64,
        source=person_source,
        verifier=secret("pkce-verifier"),
        redirect_uri="http://testserver/connections/callback/",
    )
    _, raw_token = api_token_create(user=user, name="leaky token")
    _, webhook_secret = endpoint_create(
        user=staff_user,
        name="leaky hook",
        url="https://hooks.example.com/in",
        events=["turn.finished"],
    )
    from platform_app.models import AuditExporter

    AuditExporter.objects.create(
        name="leaky exporter",
        kind=AuditExporter.Kind.HEC,
        url="https://hec.example.com",
        token=secret("hec-token"),
        headers=f"x-api-key={secret('otlp-header')}",
        secret_access_key=secret("s3-key"),
    )
    from tools_app.services.audit_chain import signing_key

    signing_key()  # the generated audit signing key, kept encrypted
    from tools_app.models import AuditSigningKey

    audit_key_line = AuditSigningKey.objects.get().private_pem.splitlines()[1]
    return [
        audit_key_line,
        secret("provider"),
        secret("search"),
        secret("mcp-header"),
        secret("mcp-bearer"),
        secret("openapi"),
        secret("person-token"),
        secret("oauth-client"),
        secret("pkce-verifier"),
        raw_token,
        webhook_secret,
        secret("hec-token"),
        secret("otlp-header"),
        secret("s3-key"),
    ]


def models_holding_secrets() -> set[type[Any]]:
    return {
        model
        for model in apps.get_models()
        if any(isinstance(f, EncryptedTextField) for f in model._meta.get_fields())
    }


def test_it_sets_a_secret_on_every_model_that_holds_one(secrets_everywhere: list[str]) -> None:
    """A model that gains an encrypted field must get a row here, or the test below would
    not look at it."""
    for model in models_holding_secrets():
        fields = [f.name for f in model._meta.get_fields() if isinstance(f, EncryptedTextField)]
        assert any(getattr(row, name) for row in model._default_manager.all() for name in fields), (
            f"no {model._meta.label} row with a secret: add one to secrets_everywhere"
        )


def test_it_never_renders_a_secret_on_any_admin_page(
    secrets_everywhere: list[str], staff_user: Any
) -> None:
    client = Client()
    client.force_login(staff_user)
    fetched: set[str] = set()
    for model, model_admin in admin.site._registry.items():
        row = model._default_manager.first()
        if row is None:
            continue
        meta = model._meta
        for page in PAGES:
            name = f"admin:{meta.app_label}_{meta.model_name}_{page}"
            url = reverse(name) if page == "changelist" else reverse(name, args=[row.pk])
            response = client.get(url)
            if page == "delete" and response.status_code == 403:
                continue  # an admin without delete (the audit log)
            assert response.status_code == 200, f"{url}: {response.status_code}"
            body = response.content.decode()
            for text in secrets_everywhere:
                assert text not in body, f"{url} shows a secret ({type(model_admin).__name__})"
        fetched.add(meta.label)
    # Every model in the admin that holds a secret had its pages fetched (a model the admin
    # does not register, such as the webhook endpoints with their own pages, has none).
    in_admin = {m for m in models_holding_secrets() if m in admin.site._registry}
    assert {m._meta.label for m in in_admin} <= fetched
    assert {"tools_app.ToolGroupConfig", "tools_app.ToolSource", "chat_app.Provider"} <= fetched


def test_it_says_which_secrets_are_stored_without_showing_them(
    secrets_everywhere: list[str], staff_user: Any
) -> None:
    from tools_app.models import ToolGroupConfig, ToolSource

    client = Client()
    client.force_login(staff_user)
    config = ToolGroupConfig.objects.get(name="research")
    page = client.get(reverse("admin:tools_app_toolgroupconfig_change", args=[config.pk]))
    assert "search_api_key: set" in page.content.decode()
    source = ToolSource.objects.get(name="leaky-mcp")
    page = client.get(reverse("admin:tools_app_toolsource_change", args=[source.pk]))
    assert "bearer: set" in page.content.decode()
    assert "headers: set" in page.content.decode()


def test_saving_a_group_in_the_admin_keeps_its_secrets(
    secrets_everywhere: list[str], staff_user: Any
) -> None:
    """The form no longer carries the secrets: saving it must not drop them."""
    from tools_app import selectors
    from tools_app.models import ToolGroupConfig

    client = Client()
    client.force_login(staff_user)
    config = ToolGroupConfig.objects.get(name="research")
    url = reverse("admin:tools_app_toolgroupconfig_change", args=[config.pk])
    response = client.post(
        url, {"name": "research", "enabled": "", "settings": json.dumps(config.settings)}
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    config.refresh_from_db()
    assert config.enabled is False
    assert selectors.group_secrets(config.secrets) == {"search_api_key": secret("search")}
