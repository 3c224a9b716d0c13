"""The REST API under ``/api/``: django-ninja, with its OpenAPI document at
``/api/openapi.json`` and interactive docs at ``/api/docs``.

Why django-ninja rather than Django REST framework: the tools already describe themselves
with pydantic models, and ninja's schemas *are* pydantic models, so the API's request and
response types, their validation and the OpenAPI document come from one description in the
language the rest of the code speaks; it serves sync and async views side by side (the
turn's event stream is async), and it is small.

Every error answers in one shape (``platform_app.api.errors``), the same as ``/v1``'s.
"""

from __future__ import annotations

import logging
from typing import Any, cast

from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError
from ninja.errors import ValidationError as NinjaValidationError
from ninja.parser import Parser

from infra import access
from infra.safe_json import JsonTooDeep, json_loads_safe
from platform_app.api.errors import ApiError, error_body
from platform_app.api.rest import admin, conversations, mine, toolcalls
from platform_app.api_tokens import MISSING

logger = logging.getLogger(__name__)

DESCRIPTION = """Control Center's REST API. Authenticate with a personal API token
(`Authorization: Bearer cc_…`, made on the Tokens page) whose **scopes** allow the
operation: `read`, `chat`, `write`, `approve`, and for admins `tools:admin` and `audit`.
Everything acts as the token's owner, through the same grants, approvals, privacy rules and
audit log as the web pages. Lists are cursor-paginated (`next_cursor`); errors are
`{"error": {"message", "type", "code", "param"}}`. docs/API_GUIDE.md has examples."""


class SafeParser(Parser):
    """Request bodies through the one loader with a nesting limit (infra/safe_json.py)."""

    def parse_body(self, request: HttpRequest) -> dict[str, Any]:
        try:
            return cast(dict[str, Any], json_loads_safe(request.body))
        except JsonTooDeep as exc:
            raise ApiError(400, f"the request body is {exc}", code="json_too_deep") from None


api = NinjaAPI(
    title="Control Center API",
    version="1",
    description=DESCRIPTION,
    urls_namespace="rest",
    parser=SafeParser(),
)
api.add_router("", mine.router)
api.add_router("", conversations.router)
api.add_router("", toolcalls.router)
api.add_router("", admin.router)


def _respond(request: HttpRequest, error: ApiError) -> HttpResponse:
    response = api.create_response(request, error.body(), status=error.status)
    for name, value in error.headers.items():
        response[name] = value
    return response


@api.exception_handler(ApiError)
def _api_error(request: HttpRequest, exc: ApiError) -> HttpResponse:
    return _respond(request, exc)


@api.exception_handler(AuthenticationError)
def _unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    headers = {"WWW-Authenticate": 'Bearer realm="controlcenter"'}
    return _respond(request, ApiError(401, MISSING, code="invalid_api_key", headers=headers))


@api.exception_handler(NinjaValidationError)
def _invalid(request: HttpRequest, exc: NinjaValidationError) -> HttpResponse:
    first: dict[str, Any] = exc.errors[0] if exc.errors else {}
    loc = [str(p) for p in first.get("loc", ())]
    where = ".".join(loc[1:] if len(loc) > 1 else loc) or "request"
    param = loc[1] if len(loc) > 1 else None
    message = f"{where}: {first.get('msg', 'invalid')}"
    return _respond(request, ApiError(422, message, code="invalid_request", param=param))


@api.exception_handler(Http404)
def _not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return _respond(request, ApiError(404, "not found", code="not_found"))


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if isinstance(exc.__cause__, ApiError):  # ninja wraps what the parser raised
        return _respond(request, exc.__cause__)
    return _respond(request, ApiError(exc.status_code, str(exc)))


@api.exception_handler(RequestDataTooBig)
def _too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return _respond(request, ApiError(413, "the request body is too large", code="too_large"))


@api.exception_handler(Exception)
def _crash(request: HttpRequest, exc: Exception) -> HttpResponse:
    logger.exception("%s %s failed", request.method, request.path, exc_info=exc)
    body = error_body(500, "internal error (the details are in the server log)", code="internal")
    return api.create_response(request, body, status=500)


@access.token("an unknown /api/ path: the API's 404 JSON, nothing read")
def unknown_path(request: HttpRequest) -> HttpResponse:
    """Anything else under /api/: the API's 404, not the web page's."""
    body = error_body(404, f"no route {request.method} {request.path}", code="unknown_url")
    return JsonResponse(body, status=404)
