"""The environment variables block of a stdio MCP server's forms (add and edit): secret values
are write-only (stored, shown as "set", never rendered back, not even on a page with errors),
plain ones are shown, refused names say why on their own field, blank keeps, Remove removes."""

from __future__ import annotations

from typing import Any

from django.test import Client
from django.urls import reverse

from tools_app.executors.mcp.services import mcp_server_add, mcp_server_env
from tools_app.models import AuditRecord, ToolSource
from tools_app.services.source_env import EnvChange
from tools_app.services.sources import source_secrets

SECRET = "ghp_form-secret-4c1d9e"
ADD = {
    "name": "gh",
    "transport": "stdio",
    "command": "github-mcp-server stdio",
    "sandbox_backend": "bubblewrap",
    "workspace": "shared",
}


def stored(name: str) -> dict[str, Any]:
    return source_secrets(ToolSource.objects.get(name=name)).get("env", {})


def test_it_adds_a_server_with_a_secret_and_a_plain_variable(staff_client: Client) -> None:
    page = staff_client.get(reverse("tools:mcp_new")).content.decode()
    assert "Environment variables" in page and 'name="env-new_name_0"' in page
    response = staff_client.post(
        reverse("tools:mcp_new"),
        {
            **ADD,
            "env-new_name_0": "GITHUB_PERSONAL_ACCESS_TOKEN",
            "env-new_value_0": SECRET,
            "env-new_name_1": "GITHUB_TOOLSETS",
            "env-new_value_1": "repos,issues",
            "env-new_plain_1": "on",
        },
    )
    assert response.status_code == 302
    source = ToolSource.objects.get(name="gh")
    assert stored("gh") == {"GITHUB_PERSONAL_ACCESS_TOKEN": SECRET}
    assert source.config["env"] == [
        {"name": "GITHUB_PERSONAL_ACCESS_TOKEN", "secret": True},
        {"name": "GITHUB_TOOLSETS", "secret": False, "value": "repos,issues"},
    ]
    audit = AuditRecord.objects.filter(kind="settings", group=source.group_name).get()
    assert audit.detail["after"]["env GITHUB_PERSONAL_ACCESS_TOKEN"] == "set"
    assert audit.detail["after"]["env GITHUB_TOOLSETS"] == "repos,issues"
    assert SECRET not in str(audit.detail)
    edit = staff_client.get(reverse("tools:source_edit", args=["gh"])).content.decode()
    assert "GITHUB_PERSONAL_ACCESS_TOKEN" in edit and "secret · set" in edit
    assert 'value="repos,issues"' in edit
    assert SECRET not in edit


def test_it_refuses_loader_and_interpreter_names_on_their_field(staff_client: Client) -> None:
    for name, why in [
        ("LD_PRELOAD", "dynamic loader"),
        ("PATH", "decides which program runs"),
        ("PYTHONPATH", "interpreter"),
        ("2FA", "not an environment variable name"),
    ]:
        response = staff_client.post(
            reverse("tools:mcp_new"),
            {**ADD, "env-new_name_0": name, "env-new_value_0": SECRET},
        )
        assert response.status_code == 200
        body = response.content.decode()
        assert why in body, name
        assert SECRET not in body  # a page with errors does not echo the secret back
    assert not ToolSource.objects.filter(name="gh").exists()


def test_a_secret_needs_a_value_and_a_value_needs_a_name(staff_client: Client) -> None:
    response = staff_client.post(
        reverse("tools:mcp_new"),
        {**ADD, "env-new_name_0": "API_KEY", "env-new_value_1": SECRET},
    )
    body = response.content.decode()
    assert "A secret variable needs a value." in body and "Give the variable a name." in body
    assert SECRET not in body
    assert not ToolSource.objects.filter(name="gh").exists()


def test_variables_are_refused_for_an_http_server(staff_client: Client) -> None:
    response = staff_client.post(
        reverse("tools:mcp_new"),
        {
            **ADD,
            "transport": "http",
            "url": "http://127.0.0.1:9/mcp",
            "allow_private": "on",
            "env-new_name_0": "API_KEY",
            "env-new_value_0": SECRET,
        },
    )
    assert "environment variables are for stdio servers" in response.content.decode()


def test_the_edit_form_keeps_replaces_and_removes(staff_client: Client, staff_user: Any) -> None:
    mcp_server_add(
        name="gh",
        command="github-mcp-server stdio",
        env=EnvChange(secret={"TOKEN": "old-secret-1"}, plain={"REGION": "eu"}),
        user=staff_user,
    )
    url = reverse("tools:source_edit", args=["gh"])
    command = "github-mcp-server stdio"
    assert (
        staff_client.post(url, {"command": command, "env-value__REGION": "eu"}).status_code == 302
    )
    assert stored("gh") == {"TOKEN": "old-secret-1"}  # blank keeps

    staff_client.post(
        url, {"command": command, "env-value__TOKEN": "new-secret-2", "env-value__REGION": "us"}
    )
    assert stored("gh") == {"TOKEN": "new-secret-2"}
    assert [(v.name, v.value) for v in mcp_server_env(ToolSource.objects.get(name="gh"))] == [
        ("TOKEN", ""),
        ("REGION", "us"),
    ]
    staff_client.post(
        url,
        {
            "command": command,
            "env-remove__TOKEN": "on",
            "env-value__REGION": "us",
            "env-new_name_0": "OTHER",
            "env-new_value_0": "third-secret-3",
        },
    )
    assert stored("gh") == {"OTHER": "third-secret-3"}
    records = AuditRecord.objects.filter(kind="settings", group="mcp_gh").order_by("id")
    changes = [(r.detail["changed"], r.detail["after"]) for r in records if r.detail["changed"]]
    assert changes[1][1]["env TOKEN"] == "changed" and changes[1][1]["env REGION"] == "us"
    assert changes[2][1]["env TOKEN"] == "removed" and changes[2][1]["env OTHER"] == "set"
    assert "env TOKEN" in changes[2][0]
    for secret in ("old-secret-1", "new-secret-2", "third-secret-3"):
        assert secret not in str(changes)
        assert secret not in staff_client.get(url).content.decode()
        assert secret not in staff_client.get(reverse("tools:audit")).content.decode()


def test_the_edit_form_of_an_http_server_has_no_variables(
    staff_client: Client, staff_user: Any
) -> None:
    mcp_server_add(name="remote", url="http://127.0.0.1:9/mcp", allow_private=True, user=staff_user)
    page = staff_client.get(reverse("tools:source_edit", args=["remote"])).content.decode()
    assert "Environment variables" not in page
