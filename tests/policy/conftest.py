"""A small organisation for the policy tests: alice and eve in "support" (granted the HTTP
tool, which the "leads" approve), bob in no group, lee in "leads". Everyone may read the
clock and files."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from tools_app.models import ToolFunctionConfig, ToolGrant
from tools_app.services.grants import everyone_group
from tools_app.services.policy import shadow_forget

LIVE_YAML = """\
groups:
  - name: Everyone
    tools: [current_time, file_read]
  - name: support
    members: [alice, eve]
    tools: [http_request]
  - name: leads
    members: [lee]
    tools: []
approvals:
  - tool: http_request
    mode: approver
    approvers: [leads]
"""


@pytest.fixture
def org(db: None) -> dict[str, Any]:
    from platform_app.people.access import access_import

    ToolGrant.objects.all().delete()
    ToolFunctionConfig.objects.all().delete()
    everyone_group()
    users = get_user_model().objects
    people = {name: users.create_user(name, password=f"{name}-password-1") for name in
              ("alice", "bob", "eve", "lee")}  # fmt: skip
    access_import(LIVE_YAML)
    shadow_forget()
    people["support"] = Group.objects.get(name="support")
    people["leads"] = Group.objects.get(name="leads")
    return people
