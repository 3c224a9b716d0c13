"""Three members in two groups, for the library's tests (and the attack tests of
tests/security/test_member_agents.py, through ``teams_make``)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from tools_app.models import ToolGrant
from tools_app.services.grants import everyone_group

SUPPORT = ["current_time", "file_read", "memory_search"]


def teams_make(user: Any, other_user: Any) -> dict[str, Any]:
    """alice in "support" (granted SUPPORT), bob in "sales" (granted current_time), carol in
    "support" too; Everyone is granted nothing."""
    ToolGrant.objects.all().delete()
    everyone_group()
    support = Group.objects.create(name="support")
    sales = Group.objects.create(name="sales")
    ToolGrant.objects.bulk_create(
        [ToolGrant(group=support, kind="function", name=n) for n in SUPPORT]
        + [ToolGrant(group=sales, kind="function", name="current_time")]
    )
    carol = get_user_model().objects.create_user("carol", password="carol-password-1")
    user.groups.add(support)
    carol.groups.add(support)
    other_user.groups.add(sales)
    return {"alice": user, "bob": other_user, "carol": carol, "support": support, "sales": sales}


@pytest.fixture
def teams(user: Any, other_user: Any) -> dict[str, Any]:
    return teams_make(user, other_user)
