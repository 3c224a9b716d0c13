"""OAuth 2.0 (authorization code with PKCE) for an OpenAPI source, per person (issue 35): the
document's ``oauth2`` scheme names the endpoints; an admin enters the client; each person
connects their own account through My connections and their calls carry their own token. A
real authorization server built from the official MCP SDK (tests/tools/mcp/oauth_servers.py)
in front of a real FastAPI app that checks the bearer token and answers with its account."""

# No `from __future__ import annotations`: FastAPI reads the annotations at run time.
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from fastapi import FastAPI, HTTPException, Security
from fastapi.security import OAuth2AuthorizationCodeBearer

from tests.helpers import logged_in
from tests.tools.calls import run_tool
from tests.tools.mcp.connect import authorize_at_server, connect, finish, start
from tests.tools.mcp.oauth_servers import SCOPE, OAuthMcp, serve_oauth_mcp
from tests.tools.openapi.api_app import serve
from tools_app.connections.models import SourceConnection
from tools_app.connections.services import source_credentials_set
from tools_app.executors.openapi.importer import openapi_fetch, openapi_import
from tools_app.imported import imported_reset
from tools_app.models import ToolCall
from tools_app.services.sources import SourceError

CLIENT_ID, CLIENT_SECRET = "cc-openapi", "cc-openapi-secret-7a1c"


def make_api(served: OAuthMcp, seen: list[tuple[str, str]]) -> FastAPI:
    app = FastAPI(title="Accounts", version="1.0")
    scheme = OAuth2AuthorizationCodeBearer(
        authorizationUrl=f"{served.base}/authorize",
        tokenUrl=f"{served.base}/token",
        refreshUrl=f"{served.base}/token",
        scopes={SCOPE: "Read the account"},
    )

    @app.get("/me", operation_id="who_am_i", summary="The account of the token")
    async def me(token: str = Security(scheme, scopes=[SCOPE])) -> dict[str, str]:
        found = await served.provider.load_access_token(token)
        if found is None:
            raise HTTPException(status_code=401, detail="bad or expired token")
        seen.append((found.subject or "", token))
        return {"account": found.subject or ""}

    def document() -> dict[str, Any]:  # the flow names its revocation endpoint (extension)
        from fastapi.openapi.utils import get_openapi

        doc = get_openapi(title=app.title, version=app.version, routes=app.routes)
        flows = doc["components"]["securitySchemes"]["OAuth2AuthorizationCodeBearer"]["flows"]
        flows["authorizationCode"]["x-revocationUrl"] = f"{served.base}/revoke"
        return doc

    app.openapi = document  # type: ignore[method-assign]
    return app


@pytest.fixture(scope="module")
def served() -> Iterator[OAuthMcp]:
    from mcp.shared.auth import OAuthClientInformationFull

    with serve_oauth_mcp(registration=False) as served:
        # The admin registered this deployment at the authorization server by hand.
        served.provider.clients[CLIENT_ID] = OAuthClientInformationFull(
            client_id=CLIENT_ID,
            client_secret=CLIENT_SECRET,
            redirect_uris=["http://testserver/connections/callback/"],
            token_endpoint_auth_method="client_secret_post",
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            scope=SCOPE,
        )
        yield served


@pytest.fixture(scope="module")
def api(served: OAuthMcp) -> Iterator[tuple[str, list[tuple[str, str]]]]:
    seen: list[tuple[str, str]] = []
    with serve(make_api(served, seen)) as url:
        yield url, seen


@pytest.fixture
def source(api: Any, transactional_db: None, staff_user: Any) -> Iterator[Any]:
    url = api[0]
    source = openapi_import(
        name="acct",
        text=openapi_fetch(f"{url}/openapi.json", document_private=True),
        document_url=f"{url}/openapi.json",
        auth={"type": "oauth2"},
        api_private=True,
        user=staff_user,
    )
    with pytest.raises(SourceError, match="no dynamic registration"):
        source_credentials_set(source=source, mode="person", user=staff_user)
    source_credentials_set(
        source=source,
        mode="person",
        user=staff_user,
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        client_auth_method="client_secret_post",  # what the SDK's revocation endpoint takes
    )
    source.refresh_from_db()
    yield source
    imported_reset()


def run(user: Any) -> ToolCall:
    return run_tool("who_am_i", user=user)


def test_the_importer_reads_the_documents_oauth2_flow(source: Any, served: OAuthMcp) -> None:
    auth = source.config["auth"]
    assert auth["type"] == "oauth2" and auth["scheme"] == "OAuth2AuthorizationCodeBearer"
    assert auth["authorization_url"] == f"{served.base}/authorize"
    assert auth["token_url"] == auth["refresh_url"] == f"{served.base}/token"
    assert auth["revocation_url"] == f"{served.base}/revoke"
    assert auth["scopes"] == [SCOPE]  # what the imported operations need


def test_two_people_two_accounts_refresh_and_disconnect(
    source: Any, served: OAuthMcp, api: Any, user: Any, other_user: Any
) -> None:
    seen = api[1]
    # Not connected: the Connect card, never anyone else's token.
    refused = run(user)
    assert refused.policy_verdict == "not_connected"
    assert refused.result["connect"] == {"source": "acct", "label": source.label}

    alice, bob = logged_in(user), logged_in(other_user)
    assert connect(alice, served, "acct", "alice-gh").status_code == 302
    assert connect(bob, served, "acct", "bob-gh").status_code == 302
    # The authorization request named the API as the resource (RFC 8707); PKCE S256 is
    # required by the SDK's authorization endpoint, so the connect flow proves it.
    assert source.config and served.observed.authorize_resources[-1] == api[0]

    mine, theirs = run(user), run(other_user)
    assert mine.status == "succeeded", mine.result
    assert mine.result["json"] == {"account": "alice-gh"}
    assert theirs.result["json"] == {"account": "bob-gh"}
    tokens = {account: token for account, token in seen[-2:]}
    assert tokens["alice-gh"] != tokens["bob-gh"]
    stored = [str(v) for v in ToolCall.objects.values_list("arguments", "result", "error")]
    assert not any(t in s for t in tokens.values() for s in stored)

    # Expired: the worker renews it at the token endpoint first, then calls.
    served.provider.expire_access()
    SourceConnection.objects.filter(user=user).update(
        expires_at=timezone.now() - timedelta(minutes=5)
    )
    renewed = run(user)
    assert renewed.result["json"] == {"account": "alice-gh"}, renewed.result
    assert "alice-gh" in served.observed.refreshed
    assert seen[-1][1] != tokens["alice-gh"]

    # Disconnect revokes at the flow's revocation endpoint, then deletes.
    connection = SourceConnection.objects.get(user=user)

    revoked_before = len(served.observed.revoked)
    alice.post(f"/connections/{connection.pk}/disconnect/")
    assert not SourceConnection.objects.filter(user=user).exists()
    assert len(served.observed.revoked) > revoked_before
    assert run(user).policy_verdict == "not_connected"
    # Bob's token expired too (his row did not know): the API's 401 renews it, the retry
    # goes through, with his own account - Alice's disconnect left his connection alone.
    first = run(other_user)
    assert first.status == "failed" and "renewed" in first.error, first.result
    assert run(other_user).result["json"] == {"account": "bob-gh"}
    assert "bob-gh" in served.observed.refreshed


def test_a_state_is_used_once_and_only_by_its_person(
    source: Any, served: OAuthMcp, user: Any, other_user: Any
) -> None:
    alice, bob = logged_in(user), logged_in(other_user)
    back = authorize_at_server(start(alice, "acct"), account="alice-gh")
    # Bob's browser brings Alice's code and state: refused, and the state is spent.
    stolen = finish(bob, back)
    assert stolen.status_code == 302
    assert not SourceConnection.objects.filter(user=other_user).exists()
    assert "someone else" in bob.get("/connections/").content.decode()
    replayed = finish(alice, back)
    assert replayed.status_code == 302
    assert not SourceConnection.objects.filter(user=user).exists()
    assert "already used" in alice.get("/connections/").content.decode()
    # A fresh one works, once.
    back = authorize_at_server(start(alice, "acct"), account="alice-gh")
    finish(alice, back)
    assert SourceConnection.objects.get(user=user).account
    finish(alice, back)
    assert "already used" in alice.get("/connections/").content.decode()
    assert run(user).result["json"] == {"account": "alice-gh"}
