"""Fixtures for the admin pages (providers, agent profiles): an admin (staff, not a
superuser) and a member."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client


@pytest.fixture
def admin_client(db: None) -> Client:
    user = get_user_model().objects.create_user("ada", is_staff=True)
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def member_client(db: None) -> Client:
    user: Any = get_user_model().objects.create_user("mia")
    client = Client()
    client.force_login(user)
    return client
