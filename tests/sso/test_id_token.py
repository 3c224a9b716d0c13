"""The ID token is believed only when the provider signed it for us: forged and tampered
tokens are refused by the check the callback runs (``platform_app.sso.client``, Authlib's
verification against the provider's JWKS). The real provider never forges, so the forgeries
are made here: from a genuine token it issued, with another key, or with its own key (the
tests made it) but claims that are not for us."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests
from joserfc import jwt
from joserfc.jwk import RSAKey

from platform_app.sso.client import SSOError, id_token_claims
from tests.sso.provider import CALLBACK_PATH, CLIENT_ID, OIDCProvider, ProviderBrowser


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@pytest.fixture
def genuine(oidc_provider: OIDCProvider, sso_settings: Any) -> dict[str, Any]:
    """A token response from the provider's token endpoint (code flow with PKCE), its nonce,
    and the provider's key id: made without the app, so nothing here trusts the app's code."""
    password = oidc_provider.person("kim", groups=["cc-support"])
    verifier = secrets.token_urlsafe(48)
    nonce = secrets.token_urlsafe(16)
    redirect_uri = f"http://testserver{CALLBACK_PATH}"
    query = urlencode(
        {
            "response_type": "code",
            "client_id": CLIENT_ID,
            "redirect_uri": redirect_uri,
            "scope": "openid email profile",
            "state": secrets.token_urlsafe(16),
            "nonce": nonce,
            "code_challenge": _b64(hashlib.sha256(verifier.encode()).digest()),
            "code_challenge_method": "S256",
        }
    )
    back = ProviderBrowser(oidc_provider).authorize(
        f"{oidc_provider.issuer}/authorize/?{query}", "kim", password
    )
    code = parse_qs(urlsplit(back).query)["code"][0]
    response = requests.post(
        f"{oidc_provider.issuer}/token/",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
        },
        auth=(CLIENT_ID, oidc_provider.client_secret),
        timeout=10,
    )
    response.raise_for_status()
    token = response.json()
    header = json.loads(base64.urlsafe_b64decode(token["id_token"].split(".")[0] + "=="))
    return {"token": token, "nonce": nonce, "kid": header["kid"]}


def _claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def _with_id_token(genuine: dict[str, Any], id_token: str) -> dict[str, Any]:
    return {**genuine["token"], "id_token": id_token}


def test_a_genuine_id_token_is_accepted(genuine: dict[str, Any]) -> None:
    claims = id_token_claims(genuine["token"], nonce=genuine["nonce"])
    assert claims["preferred_username"] == "kim" and claims["groups"] == ["cc-support"]


def test_a_token_whose_claims_were_changed_is_refused(genuine: dict[str, Any]) -> None:
    header, _, signature = genuine["token"]["id_token"].split(".")
    claims = {**_claims(genuine["token"]["id_token"]), "groups": ["cc-admins"]}
    tampered = f"{header}.{_b64(json.dumps(claims).encode())}.{signature}"
    with pytest.raises(SSOError, match="failed verification"):
        id_token_claims(_with_id_token(genuine, tampered), nonce=genuine["nonce"])


def test_a_token_signed_with_another_key_is_refused(genuine: dict[str, Any]) -> None:
    claims = {**_claims(genuine["token"]["id_token"]), "groups": ["cc-admins"]}
    other_key = RSAKey.generate_key(2048)
    forged = jwt.encode({"alg": "RS256", "kid": genuine["kid"]}, claims, other_key)
    with pytest.raises(SSOError, match="failed verification"):
        id_token_claims(_with_id_token(genuine, forged), nonce=genuine["nonce"])


def test_an_unsigned_token_is_refused(genuine: dict[str, Any]) -> None:
    claims = {**_claims(genuine["token"]["id_token"]), "groups": ["cc-admins"]}
    header = _b64(json.dumps({"alg": "none", "kid": genuine["kid"]}).encode())
    unsigned = f"{header}.{_b64(json.dumps(claims).encode())}."
    with pytest.raises(SSOError, match="failed verification"):
        id_token_claims(_with_id_token(genuine, unsigned), nonce=genuine["nonce"])


def test_a_token_signed_with_the_public_key_as_an_hmac_secret_is_refused(
    genuine: dict[str, Any], oidc_provider: OIDCProvider
) -> None:
    """The old algorithm-confusion forgery: HS256 keyed with the provider's public key."""
    public_pem = RSAKey.import_key(oidc_provider.signing_key_pem()).as_pem(private=False)
    claims = {**_claims(genuine["token"]["id_token"]), "groups": ["cc-admins"]}
    header = _b64(json.dumps({"alg": "HS256", "kid": genuine["kid"]}).encode())
    signing_input = f"{header}.{_b64(json.dumps(claims).encode())}"
    # By hand: joserfc itself refuses a PEM as an HMAC secret.
    signature = hmac.new(public_pem, signing_input.encode(), hashlib.sha256).digest()
    forged = f"{signing_input}.{_b64(signature)}"
    with pytest.raises(SSOError, match="failed verification"):
        id_token_claims(_with_id_token(genuine, forged), nonce=genuine["nonce"])


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"aud": "another-client"}, "aud|azp"),
        ({"iss": "https://idp.example"}, "iss"),
        ({"exp": int(time.time()) - 3600}, "expired"),
        ({"nonce": "not-the-one-we-sent"}, "nonce"),
    ],
)
def test_a_token_signed_by_the_provider_but_not_for_this_login_is_refused(
    genuine: dict[str, Any], oidc_provider: OIDCProvider, change: dict[str, Any], words: str
) -> None:
    """Signed with the provider's own key (the tests made it), so only the claim checks stand
    between these tokens and a login."""
    claims = {**_claims(genuine["token"]["id_token"]), **change}
    claims.pop("at_hash", None)  # not bound to an access token: that check is not the one tested
    key = RSAKey.import_key(oidc_provider.signing_key_pem())
    resigned = jwt.encode({"alg": "RS256", "kid": genuine["kid"]}, claims, key)
    token = {"id_token": resigned, "token_type": "Bearer"}
    with pytest.raises(SSOError, match=words):
        id_token_claims(token, nonce=genuine["nonce"])

    # The same token with nothing changed is accepted: the refusal was for the change alone.
    claims = {**_claims(genuine["token"]["id_token"])}
    claims.pop("at_hash", None)
    control = {"id_token": jwt.encode({"alg": "RS256", "kid": genuine["kid"]}, claims, key)}
    assert id_token_claims(control, nonce=genuine["nonce"])["sub"] == claims["sub"]
