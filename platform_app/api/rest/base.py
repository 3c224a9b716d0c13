"""What every REST endpoint shares: token authentication with a scope, the error shape in
the OpenAPI document, cursor pages, ETags."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, TypeVar

from django.db.models import Model, Q, QuerySet
from django.http import HttpRequest, HttpResponse
from ninja import Schema
from ninja.security import HttpBearer

from infra.safe_json import json_loads_safe
from platform_app.api.errors import ApiError, refusal_error
from tools_app.models import ApiToken

M = TypeVar("M", bound=Model)

DEFAULT_LIMIT = 50
MAX_LIMIT = 200


class TokenAuth(HttpBearer):
    """``Authorization: Bearer cc_…``: a token of an active person that carries ``scope``
    (and that its owner may still hold), within its rate limit."""

    def __init__(self, scope: str) -> None:
        super().__init__()
        self.scope = scope

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken:
        from platform_app.api_tokens import Refusal, api_token_for_request

        found = api_token_for_request(token.strip(), scope=self.scope)
        if isinstance(found, Refusal):
            raise refusal_error(found)
        return found


def scope(name: str) -> TokenAuth:
    return TokenAuth(name)


def token_of(request: HttpRequest) -> ApiToken:
    token = getattr(request, "auth", None)
    assert isinstance(token, ApiToken)  # every operation is authenticated
    return token


def user_of(request: HttpRequest) -> Any:
    return token_of(request).user


# --- the error shape, as the OpenAPI document describes it ----------------------------------
class ErrorDetail(Schema):
    message: str
    type: str
    code: str | None = None
    param: str | None = None


class ErrorOut(Schema):
    error: ErrorDetail


def errors(*statuses: int) -> dict[int, type[ErrorOut]]:
    """The error answers an operation documents: every one may answer 400 (a body that is
    not JSON), 401, 403, 422 (parameters or a body that do not fit) and 429, plus those
    named."""
    return {status: ErrorOut for status in (400, 401, 403, 422, 429, *statuses)}


# --- cursor pages --------------------------------------------------------------------------
class Cursor:
    """Keyset pages over a queryset ordered by ``fields`` (each descending, "-name", or
    ascending), the last one unique (the id). A cursor is the last row's values, opaque to
    the caller: rows added meanwhile never shift a page, and a deep page costs what the first
    does."""

    def __init__(self, fields: Sequence[str]) -> None:
        self.fields = list(fields)

    def page(
        self, qs: QuerySet[M], *, cursor: str | None, limit: int | None
    ) -> tuple[list[M], str | None]:
        size = min(max(limit or DEFAULT_LIMIT, 1), MAX_LIMIT)
        ordered = qs.order_by(*self.fields)
        if cursor:
            ordered = ordered.filter(self._after(self._decode(cursor)))
        rows = list(ordered[: size + 1])
        more = len(rows) > size
        rows = rows[:size]
        return rows, self._encode(rows[-1]) if more and rows else None

    def _names(self) -> list[tuple[str, bool]]:
        return [(f.lstrip("-"), f.startswith("-")) for f in self.fields]

    def _encode(self, row: Model) -> str:
        values = []
        for name, _ in self._names():
            value = getattr(row, name)
            values.append(value.isoformat() if isinstance(value, datetime) else value)
        raw = json.dumps(values, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    def _decode(self, cursor: str) -> list[Any]:
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
            values = json_loads_safe(raw)
        except (binascii.Error, ValueError):  # UnicodeDecodeError, JsonTooDeep too
            values = None
        if not isinstance(values, list) or len(values) != len(self.fields):
            raise ApiError(400, "the cursor is not one this API gave", code="invalid_cursor")
        out = []
        for (_, _), value in zip(self._names(), values, strict=True):
            if isinstance(value, str):
                try:
                    value = datetime.fromisoformat(value)
                except ValueError:
                    raise ApiError(
                        400, "the cursor is not one this API gave", code="invalid_cursor"
                    ) from None
            elif not isinstance(value, int) or isinstance(value, bool):
                raise ApiError(400, "the cursor is not one this API gave", code="invalid_cursor")
            out.append(value)
        return out

    def _after(self, values: list[Any]) -> Q:
        """Rows after the cursor's: (a, b, id) beyond it in the order's direction."""
        names = self._names()
        condition = Q()
        for i, (name, descending) in enumerate(names):
            step = Q(**{f"{name}__{'lt' if descending else 'gt'}": values[i]})
            for earlier, (other, _) in enumerate(names[:i]):
                step &= Q(**{other: values[earlier]})
            condition |= step
        return condition


BY_ID_DESC = Cursor(["-id"])


# --- ETags ---------------------------------------------------------------------------------
def etag_of(*parts: Any) -> str:
    digest = hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:32]
    return f'"{digest}"'


def not_modified(request: HttpRequest, response: HttpResponse, tag: str) -> bool:
    """Set the ETag; True when the client already has this version (answer 304)."""
    response["ETag"] = tag
    wanted = request.headers.get("If-None-Match", "")
    return tag in [t.strip() for t in wanted.split(",")] or wanted.strip() == "*"
