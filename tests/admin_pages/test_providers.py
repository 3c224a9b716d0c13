"""The Providers pages: staff only, the API key write-only (never in any response) and
encrypted at rest, Test connection against the scripted LLM server (both wire protocols)."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from django.db import connection
from django.test import Client

from chat_app.models import Provider
from chat_app.services.provider_probe import ProbeError
from chat_app.services.providers import provider_models
from tests.llm_server import Call, Reply, ScriptedLLM
from tools_app.models import AuditRecord

KEY = "sk-admin-pages-secret-1234"


def _form(**over: Any) -> dict[str, Any]:
    data = {
        "name": "Local",
        "kind": "openai",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key": "",
        "model": "m1",
        "allowed_models": "m2\nm3, m2",
        "native_tools": "auto",
        "timeout_seconds": 30,
        "max_retries": 2,
        "retry_backoff_seconds": 1.0,
    }
    data.update(over)
    return {k: v for k, v in data.items() if v is not None}


@pytest.fixture
def llm_keyed() -> Any:
    with ScriptedLLM(api_key=KEY, extra_models=("scripted-mini",)) as llm:
        yield llm


def test_a_member_gets_403_on_every_provider_url_and_changes_nothing(member_client, client, db):
    provider = Provider.objects.create(name="p", model="m", api_key=KEY, is_default=True)
    pk = provider.pk
    gets = ["/agents/providers/", "/agents/providers/new/", f"/agents/providers/{pk}/"]
    posts = [
        ("/agents/providers/new/", _form(name="evil")),
        (f"/agents/providers/{pk}/", _form(name="p", base_url="http://evil.example/v1")),
        (f"/agents/providers/{pk}/test/", {}),
        (f"/agents/providers/{pk}/delete/", {}),
    ]
    for url in gets:
        response = member_client.get(url)
        assert response.status_code == 403, url
        assert KEY not in response.content.decode()
        assert client.get(url).status_code == 302  # anonymous: to the login page
    for url, data in posts:
        assert member_client.post(url, data).status_code == 403, url
        assert client.post(url, data).status_code == 302
    provider.refresh_from_db()
    assert provider.name == "p" and provider.base_url == "" and Provider.objects.count() == 1
    assert not AuditRecord.objects.filter(group="providers").exists()


def test_create_edit_and_delete_a_provider_without_the_key_ever_shown(admin_client, db):
    response = admin_client.post("/agents/providers/new/", _form(api_key=KEY, is_default="on"))
    assert response.status_code == 302, response.content.decode()[:3000]
    provider = Provider.objects.get(name="Local")
    assert provider.api_key == KEY and provider.is_default
    assert provider.allowed_models == ["m2", "m3"]
    with connection.cursor() as cursor:  # encrypted at rest
        cursor.execute("SELECT api_key FROM chat_app_provider WHERE id = %s", [provider.pk])
        assert KEY not in str(cursor.fetchone()[0])
    for url in ("/agents/providers/", f"/agents/providers/{provider.pk}/", response.url):
        page = admin_client.get(url)
        assert page.status_code == 200 and KEY not in page.content.decode()
        assert url == "/agents/providers/" or page.get("Cache-Control") == "no-store"
    # A second default takes over; a blank key keeps the stored one.
    admin_client.post("/agents/providers/new/", _form(name="Other", is_default="on"))
    edited = admin_client.post(
        f"/agents/providers/{provider.pk}/", _form(model="m9", allowed_models="")
    )
    assert edited.status_code == 302
    provider.refresh_from_db()
    assert provider.model == "m9" and provider.api_key == KEY and not provider.is_default
    assert Provider.objects.get(name="Other").is_default
    # A form error comes back with what was typed, never with the key.
    bad = admin_client.post(
        f"/agents/providers/{provider.pk}/", _form(base_url="ftp://x", api_key="sk-typed-9999")
    )
    assert bad.status_code == 400
    text = bad.content.decode()
    assert "http:// or https://" in text and "sk-typed-9999" not in text and KEY not in text
    # Remove the key, then delete.
    admin_client.post(f"/agents/providers/{provider.pk}/", _form(clear_api_key="on"))
    provider.refresh_from_db()
    assert provider.api_key == ""
    assert admin_client.post(f"/agents/providers/{provider.pk}/delete/").status_code == 302
    assert not Provider.objects.filter(pk=provider.pk).exists()
    records = AuditRecord.objects.filter(group="providers")
    assert records.count() == 5
    assert all(KEY not in str(r.detail) for r in records)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_test_connection_lists_models_and_sees_a_native_tool_call(
    admin_client, db, llm_keyed, kind
):
    base = llm_keyed.openai_base_url if kind == "openai" else llm_keyed.anthropic_base_url
    provider = Provider.objects.create(
        name="scripted", kind=kind, base_url=base, model="scripted-model", api_key=KEY
    )
    llm_keyed.script(Reply(calls=[Call("connection_test", {})]))
    response = admin_client.post(f"/agents/providers/{provider.pk}/test/")
    text = response.content.decode()
    assert response.status_code == 200
    assert "Connected." in text and "2 listed in" in text and " ms</strong>" in text
    assert "scripted-mini" in text and "native tool calls work" in text
    assert KEY not in text
    sent = llm_keyed.requests[-1]
    assert sent["tools"] and sent["model"] == "scripted-model"


def test_test_connection_says_clearly_what_failed(admin_client, db, llm_keyed):
    provider = Provider.objects.create(
        name="wrong key", base_url=llm_keyed.openai_base_url, model="scripted-model", api_key="x"
    )
    text = admin_client.post(f"/agents/providers/{provider.pk}/test/").content.decode()
    assert "The test found a problem." in text
    assert "refused the API key (HTTP 401)" in text

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    Provider.objects.filter(pk=provider.pk).update(base_url=f"http://127.0.0.1:{port}/v1")
    text = admin_client.post(f"/agents/providers/{provider.pk}/test/").content.decode()
    assert f"cannot reach http://127.0.0.1:{port}/v1/models" in text


def test_test_connection_reports_an_endpoint_without_tool_calls(admin_client, db):
    with ScriptedLLM(reject_tools=True) as llm:
        provider = Provider.objects.create(name="o", base_url=llm.openai_base_url, model="small")
        text = admin_client.post(f"/agents/providers/{provider.pk}/test/").content.decode()
    assert "1 listed in" in text and "no native tool call" in text
    assert "does not support tools" in text


def test_provider_models_lists_and_keeps_the_list_until_refreshed(db, llm_keyed):
    provider = Provider.objects.create(
        name="s", base_url=llm_keyed.openai_base_url, model="scripted-model", api_key=KEY
    )
    assert provider_models(provider) == ["scripted-mini", "scripted-model"]
    llm_keyed.extra_models.append("scripted-new")
    assert "scripted-new" not in provider_models(provider)
    assert "scripted-new" in provider_models(provider, refresh=True)
    Provider.objects.filter(pk=provider.pk).update(api_key="")
    provider.refresh_from_db()
    with pytest.raises(ProbeError, match="refused the API key"):
        provider_models(provider, refresh=True)


def test_the_django_admin_provider_page_still_works(db, client: Client) -> None:
    from django.contrib.auth import get_user_model

    admin = get_user_model().objects.create_user("root", is_staff=True, is_superuser=True)
    client.force_login(admin)
    provider = Provider.objects.create(name="p", model="m", api_key=KEY)
    page = client.get(f"/admin/chat_app/provider/{provider.pk}/change/")
    assert page.status_code == 200 and KEY not in page.content.decode()


def test_the_fallback_grammar_box_is_on_the_page_and_saves(admin_client, db):
    response = admin_client.post("/agents/providers/new/", _form(fallback_grammar="on"))
    assert response.status_code == 302, response.content.decode()[:3000]
    provider = Provider.objects.get(name="Local")
    assert provider.fallback_grammar
    page = admin_client.get(f"/agents/providers/{provider.pk}/").content.decode()
    assert 'name="fallback_grammar"' in page and "Grammar for text fallback" in page
    admin_client.post(f"/agents/providers/{provider.pk}/", _form())
    provider.refresh_from_db()
    assert not provider.fallback_grammar  # an unticked box turns it off


def test_temperature_and_longest_reply_are_set_checked_and_cleared(admin_client, db):
    assert admin_client.post("/agents/providers/new/", _form()).status_code == 302
    provider = Provider.objects.get(name="Local")
    assert provider.temperature is None and provider.max_output_tokens is None  # the server's
    url = f"/agents/providers/{provider.pk}/"
    page = admin_client.get(url).content.decode()
    assert 'name="temperature"' in page and 'name="max_output_tokens"' in page
    saved = admin_client.post(url, _form(temperature="0", max_output_tokens="512"))
    assert saved.status_code == 302
    provider.refresh_from_db()
    assert (provider.temperature, provider.max_output_tokens) == (0.0, 512)
    for bad in ({"temperature": "2.5"}, {"temperature": "-1"}, {"max_output_tokens": "0"}):
        assert admin_client.post(url, _form(**bad)).status_code == 400, bad
    provider.refresh_from_db()
    assert (provider.temperature, provider.max_output_tokens) == (0.0, 512)
    admin_client.post(url, _form(temperature="", max_output_tokens=""))
    provider.refresh_from_db()
    assert provider.temperature is None and provider.max_output_tokens is None
