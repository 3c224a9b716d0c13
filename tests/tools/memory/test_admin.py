"""Admins see and edit every user's memory in the Django admin; an edited chunk is
re-indexed (full text at once, its vector with the configured embedder)."""

from __future__ import annotations

import pytest
from django.test import Client

from platform_app.memory import vectors
from platform_app.models import CoreMemoryEntry, MemoryChunk
from tests.tools.calls import ok, run_tool
from tests.tools.conftest import configure
from tests.tools.memory.test_hybrid import local_model

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def admin_client(staff_user):
    client = Client()
    client.force_login(staff_user)
    return client


def test_an_admin_sees_every_users_memory(admin_client, user, other_user):
    ok(run_tool("memory_save", user=user, content="Alice likes tea."))
    ok(run_tool("memory_save", user=other_user, content="Bob likes coffee."))
    ok(run_tool("memory_core_update", user=other_user, section="user", key="name", value="Bob"))
    page = admin_client.get("/admin/platform/memorychunk/").content.decode()
    assert "Alice likes tea." in page and "Bob likes coffee." in page
    page = admin_client.get("/admin/platform/corememoryentry/").content.decode()
    assert "Bob" in page


def test_an_edited_chunk_is_reindexed(admin_client, user):
    local_model()
    vectors.forget_cache()
    configure("memory", embedder="local")
    ok(run_tool("memory_save", user=user, content="The meeting room is called Atlas."))
    chunk = MemoryChunk.objects.get(user=user)
    before = bytes(chunk.embedding)
    response = admin_client.post(
        f"/admin/platform/memorychunk/{chunk.pk}/change/",
        {"user": user.pk, "content": "The meeting room is called Zephyr.", "source": "admin"},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    chunk.refresh_from_db()
    assert bytes(chunk.embedding) != before
    found = ok(run_tool("memory_search", user=user, query="Zephyr"))["results"]
    assert found[0]["content"] == "The meeting room is called Zephyr."
    assert found[0]["matched_by"] == ["full-text", "vector"]
    assert ok(run_tool("memory_search", user=user, query="Atlas"))["results"] == []


def test_an_admin_can_edit_core_memory(admin_client, user):
    ok(run_tool("memory_core_update", user=user, section="user", key="name", value="Alice"))
    entry = CoreMemoryEntry.objects.get(user=user)
    admin_client.post(
        f"/admin/platform/corememoryentry/{entry.pk}/change/",
        {"user": user.pk, "section": "user", "key": "name", "value": "Alicia"},
    )
    assert ok(run_tool("memory_core_get", user=user))["user"] == {"name": "Alicia"}
