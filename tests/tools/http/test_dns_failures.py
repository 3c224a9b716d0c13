"""Issue 23 B5: a name that does not resolve is a network failure, not a policy denial.

It used to be recorded as ``denied`` ("policy: URL refused: cannot resolve host"), which
inflated the audit's denial figures. Every tool that reaches a URL now ends ``failed`` with
the network's reason. Names under ``.invalid`` never resolve (RFC 6761); the private-host
refusals of names that DO resolve stay policy verdicts (tests/security/test_private_hosts.py).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.tools.calls import run_tool
from tests.tools.http.conftest import fake_dns  # noqa: F401  (fixture)
from tools_app.executors.openapi.importer import openapi_import
from tools_app.imported import imported_reset
from tools_app.models import ToolCall

NOWHERE = "no-such-host.invalid"


def _failed_on_the_network(call: ToolCall) -> None:
    assert call.status == ToolCall.Status.FAILED, (call.status, call.error)
    assert f"cannot resolve host '{NOWHERE}'" in call.error, call.error
    assert "policy" not in call.error and "refused" not in call.error, call.error


def test_http_request_to_an_unresolvable_name_fails(user: Any) -> None:
    _failed_on_the_network(run_tool("http_request", user=user, url=f"http://{NOWHERE}/x"))


def test_browser_open_of_an_unresolvable_name_fails(user: Any) -> None:
    _failed_on_the_network(run_tool("browser_open", user=user, url=f"https://{NOWHERE}/"))


def test_an_imported_openapi_call_to_an_unresolvable_api_fails(staff_user: Any, user: Any) -> None:
    text = json.dumps(
        {
            "openapi": "3.0.3",
            "info": {"title": "Gone", "version": "1"},
            "servers": [{"url": f"https://{NOWHERE}"}],
            "paths": {
                "/ping": {
                    "get": {"operationId": "gone_ping", "responses": {"200": {"description": "ok"}}}
                }
            },
        }
    )
    openapi_import(name="gone", text=text, user=staff_user)
    try:
        _failed_on_the_network(run_tool("gone_ping", user=user))
    finally:
        imported_reset()


def test_a_name_resolving_to_a_private_address_is_still_refused(
    user: Any,
    fake_dns: dict[str, list[str]],  # noqa: F811
) -> None:
    fake_dns["intranet.example"] = ["10.0.0.7"]
    call = run_tool("http_request", user=user, url="http://intranet.example/")
    assert call.status == ToolCall.Status.DENIED, (call.status, call.error)
    assert "not a public address: private" in call.error


@pytest.mark.parametrize("url", ["http://127.0.0.1/", "http://localhost/"])
def test_loopback_stays_a_policy_denial(user: Any, url: str) -> None:
    call = run_tool("http_request", user=user, url=url)
    assert call.status == ToolCall.Status.DENIED, (call.status, call.error)
    assert call.error.startswith("policy: URL refused"), call.error


def test_the_browsers_guard_does_not_count_an_unresolvable_name_as_blocked() -> None:
    # The request goes on to the pinning proxy, which answers "unreachable": the page sees a
    # network error, and no "blocked" entry turns the call into a denial.
    import asyncio

    from tools_app.errors import NetworkError
    from tools_app.executors.browser.guard import Judge, Policy, resolve_checked

    assert asyncio.run(Judge(Policy()).verdict(f"https://{NOWHERE}/")) is None
    assert asyncio.run(Judge(Policy()).verdict("http://127.0.0.1/")) is not None
    with pytest.raises(NetworkError):
        asyncio.run(resolve_checked(Policy(), NOWHERE, 443))
