"""Fixtures for the People pages: an admin who is staff but not a superuser (the usual
case), a superuser, and a member."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client


@pytest.fixture
def admin_user(db: None) -> Any:
    return get_user_model().objects.create_user(
        "ada", password="ada-password-1", is_staff=True, email="ada@example.com"
    )


@pytest.fixture
def admin_client(admin_user: Any) -> Client:
    client = Client()
    client.force_login(admin_user)
    return client


@pytest.fixture
def member(db: None) -> Any:
    return get_user_model().objects.create_user(
        "mia", password="mia-password-1", email="mia@example.com"
    )


@pytest.fixture
def member_client(member: Any) -> Client:
    client = Client()
    client.force_login(member)
    return client


@pytest.fixture
def superuser(db: None) -> Any:
    return get_user_model().objects.create_superuser("sam", password="sam-password-1")


@pytest.fixture
def superuser_client(superuser: Any) -> Client:
    client = Client()
    client.force_login(superuser)
    return client


def link_path(url: str) -> str:
    """The path of a one-time link (the test client speaks paths)."""
    return urlsplit(url).path
