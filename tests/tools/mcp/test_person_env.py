"""Per-person variables of a stdio MCP server (issue 35): an admin marks a variable per
person; each person enters their own value on My connections; a call's server process gets
the value of the call's person - one session per person, on a workspace of theirs - and a
person who has set none gets the card that sends them there. A real server built with the
official SDK (env_server.py) answers the SHA-256 of what it received, in the docker and
bubblewrap sandboxes. (Where the values must never appear: tests/security/
test_stdio_person_env.py.)"""

from __future__ import annotations

import hashlib
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from tests.tools.conftest import ISOLATED, require_backend
from tests.tools.mcp.test_stdio_secrets import answer, tools_of
from tests.tools.mcp.test_stdio_servers import run
from tools_app.connections.models import SourceConnection
from tools_app.connections.services import (
    ConnectError,
    credential_for_call,
    person_env_set,
    source_is_personal,
)
from tools_app.executors.mcp.services import (
    mcp_refresh,
    mcp_server_add,
    mcp_server_env,
    mcp_server_env_set,
    server_spec,
)
from tools_app.manager.source_env_forms import StdioEnvForm
from tools_app.models import ToolSource
from tools_app.services.source_env import EnvChange
from tools_app.services.sources import SourceError

ALICE_TOKEN = "ghp_alice-0001-quote'and space"
BOB_TOKEN = "ghp_bob-0002-other"


def sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def person(name: str) -> Any:
    return get_user_model().objects.create_user(name, password="pw-" + name)


def add_person_server(name: str, command: str, backend: str, admin: Any, **settings: Any) -> Any:
    source = mcp_server_add(
        name=name,
        command=command,
        settings={"sandbox_backend": backend, **settings},
        env=EnvChange(secret={"PROBE_SHARED": "shared-value"}, person={"PROBE_TOKEN"}),
        user=admin,
    )
    mcp_refresh(source)  # the admin has set no value: listed without it
    source.refresh_from_db()
    assert source.state == "up", source.last_error
    return source


@pytest.mark.parametrize("backend", ISOLATED)
def test_each_persons_call_gets_their_own_value(
    backend: str, env_server: str, transactional_db: None, staff_user: Any
) -> None:
    require_backend(backend)
    source = add_person_server(f"pe-{backend}", env_server, backend, staff_user)
    assert source_is_personal(source)
    tools = tools_of(source)
    alice, bob = person("alice"), person("bob")
    person_env_set(user=alice, source=source, values={"PROBE_TOKEN": ALICE_TOKEN})
    person_env_set(user=bob, source=source, values={"PROBE_TOKEN": BOB_TOKEN})

    got = {}
    for who in (alice, bob, alice, bob):
        call = run(who, tools["secret_sha256"], {"name": "PROBE_TOKEN"})
        assert answer(call) == {"sha256": sha(ALICE_TOKEN if who == alice else BOB_TOKEN)}
        got.setdefault(who.username, set()).add(call.sandbox_id)
        # The admin's shared variable is there for both.
        shared = run(who, tools["secret_sha256"], {"name": "PROBE_SHARED"})
        assert answer(shared) == {"sha256": sha("shared-value")}
    if backend == "docker":  # one server per person, kept between their calls
        assert len(got["alice"]) == 1 and len(got["bob"]) == 1
        assert got["alice"] != got["bob"]

    # The shared workspace mode is shared per person: Bob's server never sees Alice's files.
    mine = answer(run(alice, tools["workspace_note"], {"name": "alice-was-here"}))
    assert "alice-was-here" in mine["files"]
    theirs = answer(run(bob, tools["workspace_note"], {"name": ""}))
    assert "alice-was-here" not in theirs["files"]

    # A changed value: that person's server starts again with it; the other's is untouched.
    person_env_set(user=alice, source=source, values={"PROBE_TOKEN": "ghp_alice-new-0003"})
    call = run(alice, tools["secret_sha256"], {"name": "PROBE_TOKEN"})
    assert answer(call) == {"sha256": sha("ghp_alice-new-0003")}
    call = run(bob, tools["secret_sha256"], {"name": "PROBE_TOKEN"})
    assert answer(call) == {"sha256": sha(BOB_TOKEN)}


@pytest.mark.parametrize("backend", ISOLATED[:1])
def test_an_unset_person_gets_the_card_then_sets_their_value_on_my_connections(
    backend: str, env_server: str, transactional_db: None, staff_user: Any
) -> None:
    require_backend(backend)
    source = add_person_server("pe-card", env_server, backend, staff_user)
    tool = tools_of(source)["secret_sha256"]
    carol = person("carol")

    refused = run(carol, tool, {"name": "PROBE_TOKEN"})
    assert refused.status == "failed" and refused.policy_verdict == "not_connected"
    assert f"Set your PROBE_TOKEN for {source.label or source.name} to use {tool}" in (
        refused.error
    )
    assert refused.result["connect"] == {
        "source": source.name,
        "label": source.label or source.name,
        "variables": ["PROBE_TOKEN"],
    }

    client = Client()
    client.force_login(carol)
    page = client.get(reverse("connections:page")).content.decode()
    assert "Your PROBE_TOKEN" in page and 'name="env__PROBE_TOKEN"' in page
    # The card's Connect button leads to the page's form (no OAuth here).
    connect = client.get(reverse("connections:connect", args=[source.name]))
    assert connect.status_code == 302 and connect.url.endswith(f"#source-{source.name}")
    empty = client.post(reverse("connections:person-env", args=[source.name]), {})
    assert empty.status_code == 302 and not SourceConnection.objects.filter(user=carol).exists()
    saved = client.post(
        reverse("connections:person-env", args=[source.name]),
        {"env__PROBE_TOKEN": "carol-token-0004"},
    )
    assert saved.status_code == 302
    page = client.get(reverse("connections:page")).content.decode()
    assert "carol-token-0004" not in page and "PROBE_TOKEN set" in page

    assert answer(run(carol, tool, {"name": "PROBE_TOKEN"})) == {"sha256": sha("carol-token-0004")}

    # A variable made per person later: the card again, naming it, until it is set too.
    mcp_server_env_set(source, change=EnvChange(person={"PROBE_REGION"}), user=staff_user)
    again = run(carol, tool, {"name": "PROBE_TOKEN"})
    assert again.policy_verdict == "not_connected" and "Set your PROBE_REGION" in again.error

    # Disconnect deletes the values: the card once more.
    connection = SourceConnection.objects.get(user=carol, source=source)
    client.post(reverse("connections:disconnect", args=[connection.pk]))
    assert not SourceConnection.objects.filter(user=carol).exists()


def test_a_per_person_variable_takes_no_value_of_the_admins(
    transactional_db: None, staff_user: Any
) -> None:
    source = mcp_server_add(
        name="pe-rules",
        command="mcp-server-time",
        env=EnvChange(secret={"GITHUB_PERSONAL_ACCESS_TOKEN": "admins-own"}),
        user=staff_user,
    )
    assert not source_is_personal(source)
    source = mcp_server_env_set(
        source, change=EnvChange(person={"GITHUB_PERSONAL_ACCESS_TOKEN"}), user=staff_user
    )
    assert source_is_personal(source)
    # The admin's old value is gone: it never stands in for a person's.
    from tools_app.services.sources import source_secrets

    assert "GITHUB_PERSONAL_ACCESS_TOKEN" not in (source_secrets(source).get("env") or {})
    [var] = mcp_server_env(source)
    assert var.per_person and var.secret and not var.is_set
    with pytest.raises(SourceError, match="needs the person's own connection"):
        server_spec(source)
    with pytest.raises(SourceError, match="given twice"):
        mcp_server_env_set(
            source,
            change=EnvChange(secret={"X_TOKEN": "a"}, person={"X_TOKEN"}),
            user=staff_user,
        )
    with pytest.raises(SourceError, match="cannot be set"):
        mcp_server_env_set(source, change=EnvChange(person={"LD_PRELOAD"}), user=staff_user)

    user = person("dave")
    with pytest.raises(ConnectError, match="not a variable of this server"):
        person_env_set(user=user, source=source, values={"OTHER": "x"})
    with pytest.raises(ConnectError, match="one line"):
        person_env_set(user=user, source=source, values={"GITHUB_PERSONAL_ACCESS_TOKEN": "a\nb"})
    person_env_set(user=user, source=source, values={"GITHUB_PERSONAL_ACCESS_TOKEN": "dave-tok"})
    credential = credential_for_call(source, user_id=user.pk)
    assert credential is not None and credential.env == {"GITHUB_PERSONAL_ACCESS_TOKEN": "dave-tok"}
    spec = server_spec(source, credential=credential)
    assert "dave-tok" not in repr(spec) and "dave-tok" not in str(spec.key)
    assert spec.person == f"u{user.pk}-c{credential.connection_id}"
    assert spec.workspace_id == f"mcp-pe-rules-u{user.pk}"  # shared mode: per person

    # The admin's choice of "per person" for a stdio server says where it is made instead.
    from tools_app.connections.services import source_credentials_set

    with pytest.raises(SourceError, match="Environment variables block"):
        source_credentials_set(source=source, mode="person", user=staff_user)


def test_the_manager_form_and_the_command_mark_a_variable_per_person(
    transactional_db: None, staff_user: Any
) -> None:
    form = StdioEnvForm(
        {"env-new_name_0": "GITHUB_PERSONAL_ACCESS_TOKEN", "env-new_person_0": "on"}
    )
    assert form.is_valid(), form.errors
    assert form.change.person == {"GITHUB_PERSONAL_ACCESS_TOKEN"} and not form.change.secret
    with_value = StdioEnvForm(
        {"env-new_name_0": "TOKEN", "env-new_value_0": "x", "env-new_person_0": "on"}
    )
    assert not with_value.is_valid() and "has no value here" in str(with_value.errors)

    out = StringIO()
    call_command(
        "mcp_servers",
        "add",
        "pe-cmd",
        "--command",
        "mcp-server-time",
        "--person-env",
        "GITHUB_PERSONAL_ACCESS_TOKEN",
        "--plain-env",
        "REGION=eu",
        "--no-refresh",
        stdout=out,
    )
    source = ToolSource.objects.get(name="pe-cmd")
    assert source_is_personal(source)
    listed = StringIO()
    call_command("mcp_servers", "env", "pe-cmd", stdout=listed)
    assert "GITHUB_PERSONAL_ACCESS_TOKEN (secret, per person)" in listed.getvalue()

    client = Client()
    client.force_login(staff_user)
    page = client.get(reverse("tools:source_edit", args=[source.name])).content.decode()
    assert "per person" in page and "each person sets their own on My connections" in page
