"""Issue 39, item 3: conversations a program started through /v1 or the REST API are a list
of their own in the sidebar (its API tab), not in the chat's; each list is the owner's only."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model

from chat_app.models import Conversation, Turn
from tests.helpers import logged_in

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def ada(db: None) -> Any:
    return get_user_model().objects.create_user("ada", password="ada-password-1")


def test_the_chat_list_leaves_api_conversations_out_and_the_api_tab_lists_them(ada):
    mine = Conversation.objects.create(owner=ada, title="Plan the offsite")
    scripted = Conversation.objects.create(owner=ada, title="nightly report", source="api")
    client = logged_in(ada)
    response = client.get("/")
    assert response.url == f"/c/{mine.pk}/"  # the latest chat, not the newer API one
    html = client.get(response.url).content.decode()
    assert "Plan the offsite" in html and "nightly report" not in html
    assert 'id="filter-chat" aria-current="page"' in html
    response = client.get("/c/api/")
    assert response.url == f"/c/{scripted.pk}/"
    html = client.get(response.url).content.decode()
    assert "nightly report" in html and "Plan the offsite" not in html
    assert 'id="filter-api" aria-current="page"' in html


def test_no_api_tab_for_a_person_without_api_conversations(ada):
    Conversation.objects.create(owner=ada, title="Plan the offsite")
    client = logged_in(ada)
    html = client.get("/", follow=True).content.decode()
    assert "filter-api" not in html
    assert client.get("/c/api/").url == "/"


def test_the_api_tab_lists_only_the_owners_conversations(ada):
    bob = get_user_model().objects.create_user("bob", password="bob-password-1")
    Conversation.objects.create(owner=bob, title="bob's script", source="api")
    Conversation.objects.create(owner=ada, title="Plan the offsite")
    client = logged_in(ada)
    assert client.get("/c/api/").url == "/"  # bob's is not ada's to list
    theirs = Conversation.objects.get(owner=bob)
    assert client.get(f"/c/{theirs.pk}/").status_code == 404


def test_the_migration_marks_conversations_whose_turns_all_came_through_the_api(ada):
    api_only = Conversation.objects.create(owner=ada, title="a")
    mixed = Conversation.objects.create(owner=ada, title="b")
    chat = Conversation.objects.create(owner=ada, title="c")
    Turn.objects.create(conversation=api_only, user=ada, source=Turn.Source.API)
    Turn.objects.create(conversation=mixed, user=ada, source=Turn.Source.API)
    Turn.objects.create(conversation=mixed, user=ada, source=Turn.Source.CHAT)
    Turn.objects.create(conversation=chat, user=ada, source=Turn.Source.CHAT)
    migration = importlib.import_module("chat_app.migrations.0028_conversation_source")
    migration.api_conversations(apps, None)
    sources = dict(Conversation.objects.values_list("title", "source"))
    assert sources == {"a": "api", "b": "chat", "c": "chat"}
