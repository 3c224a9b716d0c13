"""One JSON error shape for ``/v1`` and ``/api/``: OpenAI's, which every OpenAI client
already reads::

    {"error": {"message": "...", "type": "invalid_request_error", "code": "...", "param": null}}

``type`` is the class of error (OpenAI's words), ``code`` the machine-readable reason,
``param`` the request field at fault when there is one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The error type OpenAI clients expect for each status.
TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    409: "conflict_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
    500: "server_error",
    502: "server_error",
}


@dataclass
class ApiError(Exception):
    """A request refused or failed, with the words for the caller."""

    status: int
    message: str
    code: str = ""
    param: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.message

    def body(self) -> dict[str, Any]:
        return error_body(self.status, self.message, code=self.code, param=self.param)


def error_body(
    status: int, message: str, *, code: str = "", param: str | None = None
) -> dict[str, Any]:
    return {
        "error": {
            "message": message,
            "type": TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error"),
            "code": code or None,
            "param": param,
        }
    }


def refusal_error(refusal: Any) -> ApiError:
    """The ApiError for a token refusal (``api_tokens.Refusal``): 401, 403 or 429."""
    codes = {401: "invalid_api_key", 403: "insufficient_scope", 429: "rate_limit_exceeded"}
    headers = {}
    message = refusal.message
    if refusal.status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="controlcenter"'
    if refusal.status == 429:
        headers["Retry-After"] = str(refusal.retry_after)
        message = f"{message}; try again in {refusal.retry_after} s"
    return ApiError(refusal.status, message, code=codes.get(refusal.status, ""), headers=headers)
