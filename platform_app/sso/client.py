"""The OpenID Connect relying party, done by Authlib: discovery, the authorization request
(code flow with PKCE S256, ``state`` and ``nonce`` kept in the session), the token request and
the ID token's checks (signature against the provider's JWKS, ``iss``, ``aud``, ``exp``,
``iat``, ``nonce``, ``azp``, ``at_hash``). This module adds the settings, a check of the
discovery document, and errors a person can read on the login page.

The discovery document is read on the first SSO login and kept for the life of the process
(a failed or invalid one is read again next time); the JWKS is read again when a token names a
key id it does not hold, so the provider can rotate its keys.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext as _

# Authlib and joserfc (~17 MiB with what they import) are imported by the functions that use
# them: the login page's views import this module in every process, and most deployments never
# sign in through SSO.

logger = logging.getLogger(__name__)

REQUIRED_METADATA = ("issuer", "authorization_endpoint", "token_endpoint", "jwks_uri")


class SSOError(Exception):
    """A single sign-on that cannot go on; the message is shown on the login page."""


class SSOUnavailable(SSOError):
    """The provider cannot be reached, or its discovery document is unusable."""


_lock = threading.Lock()
_clients: dict[tuple[str, ...], Any] = {}


def oidc_client() -> Any:
    """The Authlib client for the configured provider (one per configuration and process, so
    its discovery document and keys are fetched once)."""
    secret = settings.OIDC_CLIENT_SECRET
    key = (
        settings.OIDC_CLIENT_ID,
        secret,
        settings.OIDC_DISCOVERY_URL,
        " ".join(settings.OIDC_SCOPES),
        str(settings.OIDC_TIMEOUT),
    )
    with _lock:
        client = _clients.get(key)
        if client is None:
            from authlib.integrations.django_client import OAuth

            client = OAuth().register(
                "oidc",
                client_id=settings.OIDC_CLIENT_ID,
                client_secret=secret or None,
                server_metadata_url=settings.OIDC_DISCOVERY_URL,
                client_kwargs={
                    "scope": " ".join(settings.OIDC_SCOPES),
                    "code_challenge_method": "S256",
                    # A public client (no secret) proves itself with PKCE alone.
                    "token_endpoint_auth_method": "client_secret_basic" if secret else "none",
                    "default_timeout": settings.OIDC_TIMEOUT,
                },
            )
            _clients.clear()
            _clients[key] = client
    return client


def provider_metadata(client: Any) -> dict[str, Any]:
    """The provider's discovery document, fetched if not yet held, and checked."""
    url = settings.OIDC_DISCOVERY_URL
    try:
        metadata: dict[str, Any] = client.load_server_metadata()
    except (requests.RequestException, ValueError) as exc:
        client.server_metadata.clear()
        raise SSOUnavailable(
            _(
                "Single sign-on is unavailable: the provider's discovery document %(url)s could "
                "not be read (%(short)s)."
            )
            % {"url": url, "short": _short(exc)}
        ) from exc
    problems = [f"it has no {name}" for name in REQUIRED_METADATA if not metadata.get(name)]
    issuer = settings.OIDC_ISSUER
    if issuer and metadata.get("issuer") and metadata["issuer"].rstrip("/") != issuer:
        problems.append(f"its issuer is {metadata['issuer']!r}, not OIDC_ISSUER={issuer!r}")
    if problems:
        client.server_metadata.clear()
        raise SSOUnavailable(
            f"Single sign-on is unavailable: the discovery document {url} is not usable: "
            + "; ".join(problems)
            + "."
        )
    return metadata


def authorization_redirect(request: HttpRequest, *, redirect_uri: str) -> HttpResponse:
    """The redirect to the provider's authorization endpoint; state, nonce and the PKCE
    verifier are kept in the session for the callback."""
    client = oidc_client()
    provider_metadata(client)
    with translated_errors():
        response: HttpResponse = client.authorize_redirect(request, redirect_uri)
    return response


def callback_claims(request: HttpRequest) -> tuple[dict[str, Any], str]:
    """The verified ID token claims and the issuer, from the provider's redirect back."""
    client = oidc_client()
    metadata = provider_metadata(client)
    name = settings.OIDC_PROVIDER_NAME
    error = request.GET.get("error")
    if error:
        detail = request.GET.get("error_description") or error
        raise SSOError(
            _("%(name)s did not sign you in: %(detail)s") % {"name": name, "detail": detail}
        )
    with translated_errors():
        token = client.authorize_access_token(request)
    claims = token.get("userinfo")
    if not claims:
        # Without an ID token nothing says who signed in: the access token is not for us.
        raise SSOError(
            _("%(name)s returned no ID token; check that the openid scope is allowed.")
            % {"name": name}
        )
    return dict(claims), str(metadata["issuer"])


def id_token_claims(token: dict[str, Any], *, nonce: str) -> dict[str, Any]:
    """An ID token's claims, verified as the callback verifies them (signature, issuer,
    audience, expiry, nonce). ``token`` is a token endpoint's answer."""
    client = oidc_client()
    provider_metadata(client)
    with translated_errors():
        claims = client.parse_id_token(token, nonce=nonce)
    if not claims:
        raise SSOError(_("the token response holds no ID token"))
    return dict(claims)


@contextlib.contextmanager
def translated_errors() -> Iterator[None]:
    """Authlib's, requests' and joserfc's errors as ``SSOError`` with a readable message."""
    name = settings.OIDC_PROVIDER_NAME
    try:
        yield
    except Exception as exc:  # sorted below, with the libraries that raise them
        from authlib.common.errors import AuthlibBaseError
        from authlib.integrations.base_client import MismatchingStateError
        from joserfc.errors import JoseError

        if isinstance(exc, MismatchingStateError):
            raise SSOError(
                _(
                    "This sign-in was started in another browser tab or has expired; please "
                    "try again."
                )
            ) from exc
        if isinstance(exc, AuthlibBaseError):
            raise SSOError(
                _("%(name)s refused the sign-in: %(value)s")
                % {"name": name, "value": exc.description or exc.error}
            ) from exc
        if isinstance(exc, requests.RequestException):
            raise SSOUnavailable(
                _("%(name)s could not be reached (%(short)s).")
                % {"name": name, "short": _short(exc)}
            ) from exc
        if isinstance(exc, (JoseError, ValueError)):
            # A bad signature, a wrong issuer or audience, an expired token, a wrong nonce.
            logger.warning("SSO: an ID token failed verification: %s", exc)
            raise SSOError(
                _("The ID token from %(name)s failed verification (%(short)s).")
                % {"name": name, "short": _short(exc)}
            ) from exc
        raise


def _short(exc: Exception) -> str:
    if isinstance(exc, requests.ConnectionError) and exc.request is not None:
        return f"cannot connect to {urlsplit(str(exc.request.url or '')).netloc}"
    if isinstance(exc, requests.Timeout):
        return f"no answer within {settings.OIDC_TIMEOUT:g} s"
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."
