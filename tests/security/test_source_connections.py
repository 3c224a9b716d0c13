"""Attacks on per-person credentials (tools_app.connections): the connect flow's ``state``
(tampered, replayed, another person's, another browser session's), where the person is sent
back, an authorization server at a private address, another person's connection through the
ways in, and the token leaking out through results, errors, exports, webhooks or a sandbox."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import logged_in
from tests.tools.mcp.connect import authorize_at_server, connect, finish, query, start
from tests.tools.mcp.oauth_servers import OAuthMcp, serve_oauth_mcp
from tools_app.connections.models import ConnectAttempt, SourceConnection
from tools_app.connections.services import source_credentials_set
from tools_app.executors.mcp.services import mcp_refresh, mcp_server_add
from tools_app.models import AuditRecord, ToolCall
from tools_app.runtime import BindContext
from tools_app.services.binding import CallRequest, toolcall_bind
from tools_app.services.execution import toolcall_execute


@pytest.fixture
def served() -> Iterator[OAuthMcp]:
    from tools_app.executors.mcp.runtime import runtime
    from tools_app.imported import imported_reset

    with serve_oauth_mcp() as server:
        yield server
        runtime().close_all(timeout=5)
    imported_reset()


@pytest.fixture
def source(served: OAuthMcp, staff_user: Any) -> Any:
    source = mcp_server_add(
        name="svc", label="Service", url=served.url, allow_private=True, user=staff_user
    )
    source_credentials_set(source=source, mode="person", user=staff_user)
    source.refresh_from_db()
    connect(logged_in(staff_user), served, "svc", "admin-gh")
    mcp_refresh(source, user_id=staff_user.pk)
    source.refresh_from_db()
    return source


def run(user: Any, tool: str, arguments: dict[str, Any] | None = None, **ctx: Any) -> ToolCall:
    call = toolcall_bind(
        request=CallRequest(tool=tool, arguments=arguments or {}),
        ctx=BindContext(
            user_id=user.pk,
            conversation_id=ctx.get("conversation_id"),
            source=ctx.get("source", "api"),
        ),
    )
    if call.status == ToolCall.Status.QUEUED:
        toolcall_execute(tool_call_id=call.pk)
    call.refresh_from_db()
    return call


# --- state and redirect --------------------------------------------------------------------------
def test_it_refuses_a_made_up_state(served: OAuthMcp, source: Any, user: Any) -> None:
    client = logged_in(user)
    response = client.get("/connections/callback/?code=abc&state=forged-state-value")
    assert response.status_code == 302 and response["Location"] == "/connections/"
    assert "unknown or was already used" in client.get("/connections/").content.decode()
    assert not SourceConnection.objects.filter(user=user).exists()


def test_a_replayed_state_connects_nothing_the_second_time(
    served: OAuthMcp, source: Any, user: Any
) -> None:
    client = logged_in(user)
    back = authorize_at_server(start(client, "svc"), account="alice-gh")
    assert finish(client, back).status_code == 302
    SourceConnection.objects.filter(user=user).delete()
    again = finish(client, back)
    assert again["Location"] == "/connections/"
    assert "unknown or was already used" in client.get("/connections/").content.decode()
    assert not SourceConnection.objects.filter(user=user).exists()


def test_a_callback_for_another_persons_attempt_is_refused_and_spends_it(
    served: OAuthMcp, source: Any, user: Any, other_user: Any
) -> None:
    # Mallory starts, authorizes her own account, and sends Alice the callback link (login
    # CSRF: Alice would be connected to Mallory's account). Alice's browser opens it.
    mallory = logged_in(other_user)
    back = authorize_at_server(start(mallory, "svc"), account="mallory-gh")
    alice = logged_in(user)
    assert finish(alice, back)["Location"] == "/connections/"
    assert "started by someone else" in alice.get("/connections/").content.decode()
    assert not SourceConnection.objects.filter(source=source).exclude(user__is_staff=True).exists()
    # Used once: Mallory cannot finish it herself afterwards either.
    assert finish(mallory, back)["Location"] == "/connections/"
    assert not SourceConnection.objects.filter(user=other_user).exists()
    assert AuditRecord.objects.filter(tool="connection", status="connect_refused").exists()


def test_a_callback_in_another_browser_session_of_the_same_person_is_refused(
    served: OAuthMcp, source: Any, user: Any
) -> None:
    back = authorize_at_server(start(logged_in(user), "svc"), account="alice-gh")
    elsewhere = logged_in(user)  # a second session of the same person
    assert finish(elsewhere, back)["Location"] == "/connections/"
    assert not SourceConnection.objects.filter(user=user).exists()


def test_the_redirect_uri_is_ours_and_next_cannot_leave_the_site(
    served: OAuthMcp, source: Any, user: Any
) -> None:
    client = logged_in(user)
    authorize = start(client, "svc", next_url="https://evil.example/steal")
    assert query(authorize)["redirect_uri"] == "http://testserver/connections/callback/"
    assert ConnectAttempt.objects.get().next_url == ""
    done = finish(client, authorize_at_server(authorize, account="alice-gh"))
    assert done["Location"] == "/connections/"
    # A bogus Host header never becomes the redirect URI.
    response = client.get("/connections/svc/connect/", HTTP_HOST="evil.example")
    assert response.status_code == 400


def test_a_tampered_code_gets_the_servers_refusal(served: OAuthMcp, source: Any, user: Any) -> None:
    client = logged_in(user)
    back = authorize_at_server(start(client, "svc"), account="alice-gh")
    forged = back.replace("code=", "code=x")
    finish(client, forged)
    page = client.get("/connections/").content.decode()
    assert "Service refused the code: invalid_grant" in page
    assert not SourceConnection.objects.filter(user=user).exists()


def test_an_authorization_server_at_a_private_address_is_refused(
    served: OAuthMcp, staff_user: Any, user: Any
) -> None:
    source = mcp_server_add(name="sneaky", url=served.url, allow_private=True, user=staff_user)
    for issuer in ("http://10.1.2.3/", "http://169.254.169.254/"):
        source_credentials_set(source=source, mode="person", user=staff_user, issuer=issuer)
        source.refresh_from_db()
        client = logged_in(staff_user)  # its tools are not listed yet: an admin connects
        assert client.get("/connections/sneaky/connect/")["Location"] == "/connections/"
        page = client.get("/connections/").content.decode()
        assert "Cannot connect" in page and "URL refused" in page, page[:2000]
    assert not ConnectAttempt.objects.exists()


# --- another person's connection -----------------------------------------------------------------
def test_a_person_who_never_connected_never_gets_someone_elses_token_by_any_way(
    served: OAuthMcp, source: Any, user: Any, other_user: Any
) -> None:
    connect(logged_in(user), served, "svc", "alice-gh")
    assert run(user, "whoami").result["text"] == "you are alice-gh"
    seen = len(served.observed.authorizations)
    for way in ("chat", "slash", "api", "mcp", "test"):
        call = run(other_user, "whoami", source=way)
        assert call.policy_verdict == "not_connected", (way, call.result)
    assert len(served.observed.authorizations) == seen  # nothing was sent for them


def test_sessions_are_per_person_and_keys_hold_no_token(
    served: OAuthMcp, source: Any, user: Any, other_user: Any
) -> None:
    from tools_app.executors.mcp.runtime import runtime

    connect(logged_in(user), served, "svc", "alice-gh")
    connect(logged_in(other_user), served, "svc", "bob-gh")
    run(user, "whoami")
    run(other_user, "whoami")
    keys = [k for k in runtime().sessions() if k[0] == "svc"]
    assert len({k[2] for k in keys}) == len(keys) >= 2
    tokens = [t for _a, t in served.observed.issued]
    assert not any(t in repr(keys) for t in tokens)


# --- the token leaking out -----------------------------------------------------------------------
def test_a_server_echoing_the_headers_back_gets_the_token_scrubbed(
    served: OAuthMcp, source: Any, user: Any, conversation: Any
) -> None:
    from chat_app.services.transfer import export_json
    from platform_app.webhooks.receivers import _call_data

    connect(logged_in(user), served, "svc", "alice-gh")
    call = run(user, "echo_headers", conversation_id=conversation.pk, source="chat")
    assert call.status == "succeeded", call.result
    token = dict(served.observed.issued)["alice-gh"]
    assert "Bearer ***" in call.result["text"] and token not in call.result["text"]
    # An argument cannot bring it back either (the model never knew it; a lucky guess is
    # echoed as sent, and is scrubbed all the same).
    echoed = run(user, "echo", {"text": f"my token is {token}"})
    assert token not in json.dumps(echoed.result)
    stored = json.dumps(
        [
            [c.arguments, c.result, c.output, c.error]
            for c in ToolCall.objects.filter(tool__in=["echo_headers", "whoami"])
        ]
        + [[r.result, r.detail, r.error] for r in AuditRecord.objects.all()]
    )
    assert token not in stored
    assert token not in export_json(conversation)
    assert token not in json.dumps(_call_data(call), default=str)


def test_the_token_is_never_in_the_sandbox_environment(
    served: OAuthMcp, source: Any, user: Any
) -> None:
    import os

    connect(logged_in(user), served, "svc", "alice-gh")
    run(user, "whoami")
    token = dict(served.observed.issued)["alice-gh"]
    assert not any(token in v for v in os.environ.values())  # the worker's own environment
    shell = run(user, "shell_exec", {"command": "env; cat /proc/self/environ"})
    assert shell.status in ("succeeded", "failed"), shell.result
    assert token not in json.dumps(shell.result) and token not in shell.output


@pytest.mark.django_db(transaction=True)
def test_only_a_call_refused_for_want_of_a_connection_can_be_retried(user, conversation):
    """The Connect card's Retry replays a call as the owner's ``/`` command; any other refused
    call (a guard held a sink the model chose) replayed that way would escape its guard."""
    from chat_app.services.turns import TurnError, toolcall_retry

    held = ToolCall.objects.create(
        conversation=conversation,
        user=user,
        tool="current_time",
        group="time",
        arguments={"timezone": "UTC"},
        status=ToolCall.Status.DENIED,
        policy_verdict="guard",
        error="refused: after content from https://attacker.example/ entered this turn",
    )
    with pytest.raises(TurnError, match="cannot be retried"):
        toolcall_retry(user=user, conversation_id=conversation.pk, call_id=held.pk)
    unconnected = ToolCall.objects.create(
        conversation=conversation,
        user=user,
        tool="current_time",
        group="time",
        arguments={"timezone": "UTC"},
        status=ToolCall.Status.DENIED,
        result={"success": False, "connect": {"source": "svc"}},
    )
    turn = toolcall_retry(user=user, conversation_id=conversation.pk, call_id=unconnected.pk)
    assert turn is not None
    assert turn.messages.get(role="user").content == '/current_time {"timezone": "UTC"}'
