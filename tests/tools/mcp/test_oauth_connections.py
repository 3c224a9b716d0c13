"""Per-person credentials for an MCP server behind a real OAuth 2.1 authorization server
(the SDK's own pieces, tests/tools/mcp/oauth_servers.py): discovery, dynamic registration,
PKCE and the resource indicator, two people served as their own accounts, refresh, revocation,
the Connect card for whoever has not connected, disconnect and deactivation."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import logged_in, wait_for
from tests.tools.mcp.connect import connect, connected, query, start
from tests.tools.mcp.oauth_servers import OAuthMcp, serve_oauth_mcp
from tools_app.connections.models import SourceConnection, SourceOAuthClient
from tools_app.connections.services import source_credentials_set
from tools_app.executors.mcp.services import mcp_refresh, mcp_server_add
from tools_app.models import AuditRecord, ToolCall, ToolFunctionConfig
from tools_app.runtime import BindContext
from tools_app.services.binding import CallRequest, toolcall_bind
from tools_app.services.execution import toolcall_execute


@pytest.fixture
def served() -> Iterator[OAuthMcp]:
    from tools_app.executors.mcp.runtime import runtime

    with serve_oauth_mcp() as server:
        yield server
        runtime().close_all(timeout=5)


@pytest.fixture
def source(served: OAuthMcp, staff_user: Any) -> Any:
    """The server registered per person; the admin connects their own account and lists its
    tools with it."""
    source = mcp_server_add(
        name="svc", label="Service", url=served.url, allow_private=True, user=staff_user
    )
    source_credentials_set(source=source, mode="person", user=staff_user)
    source.refresh_from_db()
    connected(logged_in(staff_user), served, "svc", "admin-gh")
    mcp_refresh(source, user_id=staff_user.pk)
    source.refresh_from_db()
    assert {f["name"] for f in source.functions} == {"whoami", "echo", "echo_headers"}
    return source


def run(user: Any, tool: str, arguments: dict[str, Any] | None = None, **ctx: Any) -> ToolCall:
    call = toolcall_bind(
        request=CallRequest(tool=tool, arguments=arguments or {}),
        ctx=BindContext(user_id=user.pk, conversation_id=None, source=ctx.get("source", "api")),
    )
    if call.status == ToolCall.Status.QUEUED:
        toolcall_execute(tool_call_id=call.pk)
    call.refresh_from_db()
    return call


@pytest.mark.modes
def test_two_people_connect_two_accounts_and_each_call_is_served_as_its_own(
    served: OAuthMcp, source: Any, user: Any, other_user: Any
) -> None:
    assert connect(logged_in(user), served, "svc", "alice-gh").status_code == 302
    assert connect(logged_in(other_user), served, "svc", "bob-gh").status_code == 302
    mine, theirs = run(user, "whoami"), run(other_user, "whoami")
    assert mine.status == "succeeded", mine.result
    assert mine.result["text"] == "you are alice-gh"
    assert theirs.result["text"] == "you are bob-gh"
    # Each audit record says which account served it.
    assert AuditRecord.objects.get(tool_call=mine).result["connection"] == "alice-gh"
    assert AuditRecord.objects.get(tool_call=theirs).result["connection"] == "bob-gh"
    # One registered client (RFC 7591), the resource indicator (RFC 8707) on the authorization
    # and every token request, each person's own token on the wire.
    assert len(served.observed.registered) == 1
    assert SourceOAuthClient.objects.get(source=source).registered
    assert set(served.observed.authorize_resources) == {served.url}
    assert set(served.observed.token_resources) == {served.url}
    tokens = dict(served.observed.issued)
    assert f"Bearer {tokens['alice-gh']}" in served.observed.authorizations
    assert f"Bearer {tokens['bob-gh']}" in served.observed.authorizations
    row = SourceConnection.objects.get(user=user, source=source)
    assert row.account == "alice-gh" and row.scopes == "tools:read"
    assert row.expires_at is not None and row.last_used_at is not None
    from django.db import connection as db

    with db.cursor() as cursor:  # encrypted at rest: the column never holds the token
        cursor.execute("SELECT secrets FROM tools_app_sourceconnection WHERE id = %s", [row.pk])
        assert tokens["alice-gh"] not in cursor.fetchone()[0]


def test_the_connections_page_lists_the_account(served: OAuthMcp, source: Any, user: Any) -> None:
    client = logged_in(user)
    page = client.get("/connections/").content.decode()
    assert "Service" in page and "not connected" in page and "/connections/svc/connect/" in page
    connect(client, served, "svc", "alice-gh")
    page = client.get("/connections/").content.decode()
    assert "alice-gh" in page and "tools:read" in page and "Disconnect" in page
    assert dict(served.observed.issued)["alice-gh"] not in page


def test_a_person_who_never_connected_gets_the_connect_card_and_no_other_token(
    served: OAuthMcp, source: Any, user: Any, other_user: Any
) -> None:
    connect(logged_in(user), served, "svc", "alice-gh")
    # Even where approval is required, the call ends at binding, before anyone is asked.
    ToolFunctionConfig.objects.create(name="whoami", approval_mode="requester")
    before = len(served.observed.authorizations)
    call = run(other_user, "whoami")
    assert call.status == "failed" and call.policy_verdict == "not_connected"
    assert call.result["connect"] == {"source": "svc", "label": "Service"}
    assert "must connect their own Service account to use whoami" in call.error
    assert len(served.observed.authorizations) == before  # nothing was sent for them
    assert AuditRecord.objects.get(tool_call=call).policy_verdict == "not_connected"


@pytest.mark.modes
def test_an_expired_token_is_refreshed_by_the_worker(
    served: OAuthMcp, source: Any, user: Any
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    connect(logged_in(user), served, "svc", "alice-gh")
    assert run(user, "whoami").result["text"] == "you are alice-gh"
    # Expired by our clock: renewed before the call.
    SourceConnection.objects.filter(user=user).update(expires_at=timezone.now() - timedelta(1))
    assert run(user, "whoami").result["text"] == "you are alice-gh"
    assert served.observed.refreshed == ["alice-gh"]
    # Expired by the server's clock (it answers 401): renewed on the 401, the request again.
    served.provider.expire_access()
    again = run(user, "whoami")
    assert again.status == "succeeded", again.result
    assert served.observed.refreshed == ["alice-gh", "alice-gh"]
    assert SourceConnection.objects.get(user=user).expires_at > timezone.now()


@pytest.mark.modes
def test_processes_refreshing_at_once_spend_a_rotating_refresh_token_once(
    served: OAuthMcp, source: Any, user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two workers (processes, hosts) find the same token expired at once. The authorization
    server rotates refresh tokens (each is accepted once): the second must read what the first
    stored, never spend the old one and break the person's connection. The threads here stand
    for processes: each gets a lock of its own, so only the database's row lock (PostgreSQL)
    keeps them apart; SQLite is embedded mode's one process, where the process lock does."""
    import threading

    from django.db import connection as db

    from tools_app.connections import services

    connect(logged_in(user), served, "svc", "alice-gh")
    connection = SourceConnection.objects.get(user=user)
    old = services._secrets(connection)["access_token"]
    if db.vendor != "sqlite":

        class OwnLocks(dict):  # type: ignore[type-arg]
            def setdefault(self, key: Any, default: Any = None) -> Any:
                return threading.Lock()  # another process's lock: keeps nobody out

        monkeypatch.setattr(services, "_refresh_locks", OwnLocks())
    barrier = threading.Barrier(3)
    tokens: list[str] = []
    errors: list[BaseException] = []

    def refresh() -> None:
        barrier.wait()
        try:
            renewed = services.connection_refresh(connection.pk, rejected=old)
            tokens.append(services._secrets(renewed)["access_token"])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            db.close()

    threads = [threading.Thread(target=refresh) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    assert served.observed.refreshed == ["alice-gh"]  # the refresh token spent once
    assert len(set(tokens)) == 1 and old not in tokens, tokens
    assert SourceConnection.objects.get(user=user).state == SourceConnection.State.ACTIVE
    assert run(user, "whoami").result["text"] == "you are alice-gh"


def test_a_revoked_token_brings_the_connect_card_back(
    served: OAuthMcp, source: Any, user: Any
) -> None:
    connect(logged_in(user), served, "svc", "alice-gh")
    assert run(user, "whoami").status == "succeeded"
    served.provider.revoke_account("alice-gh")  # revoked at the service, refresh token too
    failed = run(user, "whoami")
    assert failed.status == "failed" and failed.result["connect"]["source"] == "svc"
    assert "must connect" in failed.error
    assert SourceConnection.objects.get(user=user).state == "broken"
    # The next call stops at binding; connecting again makes it work.
    assert run(user, "whoami").policy_verdict == "not_connected"
    connect(logged_in(user), served, "svc", "alice-gh")
    assert run(user, "whoami").result["text"] == "you are alice-gh"
    # The server's own state stays "up": one person's token is not the server being down.
    source.refresh_from_db()
    assert source.state == "up"


def test_disconnect_revokes_and_deletes_and_is_audited(
    served: OAuthMcp, source: Any, user: Any, other_user: Any
) -> None:
    client = logged_in(user)
    connect(client, served, "svc", "alice-gh")
    row = SourceConnection.objects.get(user=user)
    # Someone else cannot disconnect it.
    assert logged_in(other_user).post(f"/connections/{row.pk}/disconnect/").status_code == 404
    assert client.post(f"/connections/{row.pk}/disconnect/").status_code == 302
    assert not SourceConnection.objects.filter(user=user).exists()
    access = dict(served.observed.issued)["alice-gh"]
    # Revoked at the server (RFC 7009): the refresh token, and with it the whole grant.
    assert served.observed.revoked and served.observed.revoked[0].startswith("rt-")
    assert access not in served.provider.access
    record = AuditRecord.objects.filter(tool="connection", status="disconnected").get()
    assert record.detail["account"] == "alice-gh" and record.detail["revoked"] is True
    assert access not in str(record.detail)
    assert run(user, "whoami").policy_verdict == "not_connected"


@pytest.mark.modes  # the revocation runs on a worker
def test_deactivating_a_person_revokes_and_deletes_their_connections(
    served: OAuthMcp, source: Any, user: Any, staff_user: Any, worker: str
) -> None:
    from platform_app.people.services import user_set_active

    connect(logged_in(user), served, "svc", "alice-gh")
    access = dict(served.observed.issued)["alice-gh"]
    user_set_active(actor=staff_user, user=user, active=False)
    wait_for(
        lambda: not SourceConnection.objects.filter(user=user).exists(),
        timeout=20,
        message="the connections of a deactivated person to be deleted",
    )
    assert served.observed.revoked and access not in served.provider.access


def test_the_servers_refusal_is_shown_in_its_own_words(
    served: OAuthMcp, source: Any, user: Any
) -> None:
    from tests.tools.mcp.connect import authorize_at_server, finish

    client = logged_in(user)
    back = authorize_at_server(start(client, "svc"), account=None)
    assert query(back)["error"] == "access_denied"
    page = finish(client, back)
    assert page.status_code == 302 and page["Location"] == "/connections/"
    text = client.get("/connections/").content.decode()
    assert "Service did not authorize the connection: access_denied" in text
    assert "The person refused" in text
    assert not SourceConnection.objects.filter(user=user).exists()


def test_pkce_s256_and_our_callback_are_in_the_authorization_request(
    served: OAuthMcp, source: Any, user: Any
) -> None:
    authorize = query(start(logged_in(user), "svc"))
    assert authorize["code_challenge_method"] == "S256" and len(authorize["code_challenge"]) == 43
    assert authorize["redirect_uri"] == "http://testserver/connections/callback/"
    assert authorize["resource"] == served.url and authorize["scope"] == "tools:read"
    assert "code_verifier" not in authorize  # kept on our side


def test_an_admin_entered_client_is_used_where_registration_is_not_offered(
    staff_user: Any, user: Any
) -> None:
    from mcp.shared.auth import OAuthClientInformationFull

    with serve_oauth_mcp(registration=False) as served:
        source = mcp_server_add(name="noreg", url=served.url, allow_private=True, user=staff_user)
        source_credentials_set(source=source, mode="person", user=staff_user)
        source.refresh_from_db()
        client = logged_in(staff_user)  # an admin connects first, to list its tools
        response = client.get("/connections/noreg/connect/")
        assert response["Location"] == "/connections/"
        assert (
            "offers no dynamic client registration" in client.get("/connections/").content.decode()
        )
        # The admin registers a client at the service and enters it.
        served.provider.clients["cc-admin"] = OAuthClientInformationFull(
            client_id="cc-admin",
            client_secret="s3cr3t-admin-client",
            redirect_uris=["http://testserver/connections/callback/"],  # type: ignore[list-item]
            token_endpoint_auth_method="client_secret_basic",
            scope="tools:read",
        )
        source_credentials_set(
            source=source,
            mode="person",
            user=staff_user,
            client_id="cc-admin",
            client_secret="s3cr3t-admin-client",
        )
        source.refresh_from_db()
        assert connect(client, served, "noreg", "carol-gh").status_code == 302
        assert SourceConnection.objects.get(user=staff_user).account == "carol-gh"
        assert served.observed.registered == []
        from tools_app.executors.mcp.runtime import runtime

        runtime().close_all(timeout=5)


def test_an_admin_chooses_the_credentials_of_a_source(
    served: OAuthMcp, staff_user: Any, user: Any
) -> None:
    source = mcp_server_add(name="chosen", url=served.url, allow_private=True, user=staff_user)
    url = "/tools/sources/chosen/credentials/"
    assert logged_in(user).get(url).status_code == 403
    admin = logged_in(staff_user)
    page = admin.get(url).content.decode()
    assert "http://testserver/connections/callback/" in page and 'value="shared"' in page
    response = admin.post(
        url,
        {
            "credentials": "person",
            "client_id": "cc-client",
            "client_secret": "cc-secret-9f2e",
            "scopes": "repo  read:org",
        },
    )
    assert response.status_code == 302
    source.refresh_from_db()
    assert source.config["credentials"] == "person"
    assert source.config["oauth"] == {"client_id": "cc-client", "scopes": "repo read:org"}
    page = admin.get(url).content.decode()
    assert "cc-secret-9f2e" not in page and "cc-client" in page
    record = AuditRecord.objects.filter(group=source.group_name, kind="settings").latest("id")
    assert "cc-secret-9f2e" not in str(record.detail)
    # A stdio server takes no personal credentials: said on the page, nothing saved.
    stdio = mcp_server_add(name="local", command="mcp-server-time", user=staff_user)
    page = admin.post(
        "/tools/sources/local/credentials/", {"credentials": "person"}
    ).content.decode()
    assert "is per person through its environment variables" in page
    stdio.refresh_from_db()
    assert "credentials" not in stdio.config
