"""Pages, setup commands and deployment files."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from chat_app.models import Provider
from tests.helpers import settings_in


@pytest.mark.modes
def test_healthz_reports_mode_and_services_without_secrets(worker, client, provider):
    provider.api_key = "sk-very-secret"
    provider.save()
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["mode"] == worker
    assert body["database"]["ok"] and body["channel_layer"]["ok"]
    assert body["provider"]["configured"] is True
    assert "sk-very-secret" not in response.content.decode()


def test_every_page_needs_a_login_except_healthz(client, db):
    assert client.get("/").status_code == 302
    assert client.get("/c/1/").url.startswith("/accounts/login/")
    assert client.get("/accounts/login/").status_code == 200


def test_ensure_admin_uses_the_environment(monkeypatch, db):
    monkeypatch.setenv("DJANGO_SUPERUSER_USERNAME", "boss")
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "boss-password-1")
    call_command("ensure_admin")
    call_command("ensure_admin")  # idempotent
    admin = get_user_model().objects.get(username="boss")
    assert admin.is_superuser and admin.check_password("boss-password-1")


def test_ensure_admin_generates_and_prints_a_password_once(monkeypatch, db, capsys):
    monkeypatch.delenv("DJANGO_SUPERUSER_USERNAME", raising=False)
    monkeypatch.delenv("DJANGO_SUPERUSER_PASSWORD", raising=False)
    call_command("ensure_admin")
    first = capsys.readouterr().out
    call_command("ensure_admin")
    assert "with password:" in first and capsys.readouterr().out == ""
    password = first.split("with password:")[1].split()[0]
    assert get_user_model().objects.get(username="admin").check_password(password)


def test_the_default_provider_is_seeded_from_the_environment(settings, db):
    from chat_app.services.providers import provider_default, provider_seed_from_env

    settings.LLM = {
        "provider": "anthropic",
        "base_url": "",
        "api_key": "k",
        "model": "claude",
        "native_tools": "auto",
        "timeout": 30.0,
    }
    provider_seed_from_env()
    provider_seed_from_env()
    assert Provider.objects.count() == 1
    assert provider_default().kind == "anthropic"


def test_the_provider_api_key_is_write_only_in_the_admin(admin_client, db):
    provider = Provider.objects.create(name="p", kind="openai", model="m", api_key="sk-hidden-1")
    page = admin_client.get(f"/admin/chat_app/provider/{provider.pk}/change/")
    assert page.status_code == 200 and "sk-hidden-1" not in page.content.decode()
    data = {
        "name": "p",
        "kind": "openai",
        "base_url": "",
        "api_key": "",
        "model": "m2",
        "native_tools": "auto",
        "tools_supported": "unknown",
        "timeout_seconds": 120,
        "max_retries": 3,
        "retry_backoff_seconds": 1.0,
    }
    response = admin_client.post(f"/admin/chat_app/provider/{provider.pk}/change/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    provider.refresh_from_db()
    assert provider.model == "m2" and provider.api_key == "sk-hidden-1"  # blank keeps the key


def test_an_auditor_may_read_anyones_conversation_but_others_may_not(
    client, user, other_user, staff_user
):
    # staff_user is a superuser: it holds chat_app.audit_conversations (staff alone do not:
    # tests/security/test_privacy.py).
    from chat_app.models import Conversation

    mine = Conversation.objects.create(owner=user, title="Alice's plans")
    client.force_login(other_user)
    assert client.get(f"/c/{mine.pk}/").status_code == 404
    client.force_login(staff_user)
    page = client.get(f"/c/{mine.pk}/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "Viewing <strong>alice</strong>" in body and "read-only" in body
    assert 'id="composer" class="composer" autocomplete="off" hidden' in body


def test_a_conversation_picks_its_agent(client, user, other_user):
    from chat_app.models import Agent, Conversation

    conversation = Conversation.objects.create(owner=user)
    coder = Agent.objects.create(name="Coder", all_tools=False, tools=["run_tests"])
    client.force_login(user)
    page = client.get(f"/c/{conversation.pk}/").content.decode()
    assert 'id="agent-bar"' in page and "General" in page and "Coder" in page
    response = client.post(
        f"/c/{conversation.pk}/agent/", {"agent": coder.pk}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200 and "saved" in response.content.decode()
    conversation.refresh_from_db()
    assert conversation.agent == coder
    client.force_login(other_user)
    assert client.post(f"/c/{conversation.pk}/agent/", {"agent": coder.pk}).status_code == 404


def test_a_placeholder_secret_key_is_refused(tmp_path):
    for placeholder in ("change-me-in-production", "change-me", "django-insecure-abc"):
        proc = settings_in(tmp_path, SECRET_KEY=placeholder)
        assert proc.returncode != 0
        assert "is a placeholder" in proc.stderr


def test_without_a_secret_key_processes_sharing_var_share_a_generated_one(tmp_path):
    keys = {settings_in(tmp_path).stdout.strip() for _ in range(3)}
    assert len(keys) == 1 and len(keys.pop()) >= 50
    assert (tmp_path / "secret_key").stat().st_mode & 0o777 == 0o600
    assert not list(tmp_path.glob(".secret_key.*"))


def test_a_new_conversations_page_and_snapshot_do_not_read_the_turn_tree(client, user, db):
    """A conversation without turns has one path: the tree (branches) is not read for it; once
    it has a turn, the page reads it."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from chat_app.models import Conversation, Message, Turn
    from chat_app.selectors import conversation_snapshot

    conversation = Conversation.objects.create(owner=user, title="New")
    client.force_login(user)

    def tree_reads() -> int:
        with CaptureQueriesContext(connection) as seen:
            assert client.get(f"/c/{conversation.pk}/").status_code == 200
            conversation_snapshot(conversation)
        return sum('"chat_app_turn"."chosen_at" AS' in q["sql"] for q in seen.captured_queries)

    assert tree_reads() == 0
    turn = Turn.objects.create(conversation=conversation, user=user, status=Turn.Status.SUCCEEDED)
    Message.objects.create(conversation=conversation, turn=turn, role="user", content="hi")
    assert tree_reads() == 2
