"""``manage.py access export`` / ``import``: groups, members, grants and approval modes as
YAML (issue 22, configuration as code): the issue's shape imports, a file round-trips, an
unknown name is an error naming its line, and nothing is half-imported."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command

from chat_app.models import Agent
from platform_app.people.access import AccessImportError, access_export, access_import
from tools_app.models import ToolFunctionConfig, ToolGrant
from tools_app.services.grants import everyone_group, granted_tools, group_grants

pytestmark = [pytest.mark.django_db, pytest.mark.grants]

ISSUE_SHAPE = """\
groups:
  - name: Everyone
    tools: ["group:Time"]
    agents: [General]
  - name: leads
    members: [bob]
  - name: support
    members: [alice]
    tools: [current_time, http_request]      # function names, or "group:<Tool group>"
    agents: [General]
    sources: []                               # imported MCP / OpenAPI groups by name
approvals:
  - tool: http_request
    mode: approver                            # none | requester | approver
    approvers: [leads]                        # group names (approver mode)
"""


@pytest.fixture
def people(db: None) -> tuple[object, object]:
    ToolGrant.objects.all().delete()
    Agent.objects.get_or_create(name="General")
    users = get_user_model().objects
    return users.create_user("alice"), users.create_user("bob")


def test_the_issues_shape_imports(people):
    alice, bob = people
    summary = access_import(ISSUE_SHAPE)
    assert summary.groups == ["Everyone", "leads", "support"]
    support = Group.objects.get(name="support")
    assert list(support.user_set.all()) == [alice]
    assert group_grants(support) == {
        "group": [],
        "function": ["current_time", "http_request"],
        "source": [],
    }
    assert group_grants(everyone_group())["group"] == ["time"]
    assert granted_tools(alice.pk) == {"current_time", "http_request"}
    assert granted_tools(bob.pk) == {"current_time"}
    config = ToolFunctionConfig.objects.get(name="http_request")
    assert config.approval_mode == "approver"
    assert [g.name for g in config.approver_groups.all()] == ["leads"]
    assert list(Agent.objects.get(name="General").groups.order_by("name")) == [
        everyone_group(),
        support,
    ]


def test_an_export_imports_back_to_the_same_state(people, tmp_path):
    access_import(ISSUE_SHAPE)
    exported = access_export()
    assert "name: support" in exported and "group:time" in exported
    # Wipe what the file describes, then import the export.
    ToolGrant.objects.all().delete()
    Group.objects.exclude(name="Everyone").delete()
    ToolFunctionConfig.objects.all().delete()
    path = tmp_path / "access.yaml"
    path.write_text(exported)
    out = io.StringIO()
    call_command("access", "import", str(path), stdout=out)
    assert "imported 3 group(s)" in out.getvalue()
    assert access_export() == exported


@pytest.mark.parametrize(
    ("replace", "by", "message"),
    [
        ("members: [alice]", "members: [alice, zoe]", "line 8: no user named 'zoe'"),
        ("[current_time, http_request]", "[current_time, nope]", "line 9: no tool named 'nope'"),
        ('["group:Time"]', '["group:Nope"]', "line 3: no tool group named 'Nope'"),
        ("agents: [General]\n  - name: leads", "agents: [Ghost]\n  - name: leads", "line 4"),
        ("sources: []", "sources: [wiki]", "line 11: no imported source named 'wiki'"),
        ("approvers: [leads]", "approvers: [heads]", "line 15: no group named 'heads'"),
        ("mode: approver", "mode: sometimes", "line 13: http_request: mode must be one of"),
        ("  - name: leads\n", "  - name: leads\n    colour: red\n", "unknown key 'colour'"),
        ("  - name: Everyone\n", "  - name: Everyone\n    members: [bob]\n", "leave out members"),
    ],
)
def test_a_wrong_name_names_its_line_and_nothing_is_imported(people, replace, by, message):
    assert replace in ISSUE_SHAPE
    with pytest.raises(AccessImportError) as excinfo:
        access_import(ISSUE_SHAPE.replace(replace, by, 1))
    assert message in str(excinfo.value)
    assert not Group.objects.filter(name__in=["leads", "support"]).exists()
    assert not ToolGrant.objects.exists()
    assert not ToolFunctionConfig.objects.exists()


def test_the_command_reports_the_error_and_the_file(people, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("groups:\n  - name: x\n    tools: [nope]\n")
    with pytest.raises(CommandError, match=r"bad.yaml: line 3: no tool named 'nope'"):
        call_command("access", "import", str(path))
    assert not Group.objects.filter(name="x").exists()
