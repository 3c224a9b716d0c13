"""The guards through the real path (binding, execution, the agent loop with the scripted
model), against real HTTP servers on loopback: a key in a result is redacted before the model
reads it, a token in the arguments waits for a person, personal data only when switched on,
and filter webhooks that accept, reject, mutate, time out and answer garbage."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from chat_app.models import Turn
from chat_app.services.turns import turn_start
from infra.signing import signature
from tests.conftest import wait_turn
from tests.httpserver import Hit, HttpServer, Response, serving
from tests.llm_server import Call, Reply
from tests.tools.calls import ok, run_tool
from tests.tools.conftest import configure
from tools_app.models import AuditRecord, ToolCall, ToolFunctionConfig

pytestmark = [pytest.mark.django_db(transaction=True)]

PAGES = "127.0.0.61"
FILTER = "127.0.0.62"
AWS = "AKIAIOSFODNN7EXAMPLE"
GITHUB = "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"


def _text(body: str) -> Any:
    return lambda hit: (200, [("Content-Type", "text/plain")], body.encode())


@pytest.fixture
def pages() -> Iterator[HttpServer]:
    routes = {
        "/key": _text(f"deploy with aws_access_key_id={AWS} please"),
        "/pii": _text("write to alice@example.org or card 4111 1111 1111 1111"),
        "/plain": _text("nothing to see"),
    }
    with serving(PAGES, routes) as server:
        configure("http", private_allowed=[PAGES])
        yield server


def _filter_routes(answers: dict[str, Any]) -> dict[Any, Any]:
    def route(body: Any) -> Any:
        def answer(hit: Hit) -> Response:
            if body == "mutate-args":  # the arguments stage: another page; then accept
                sent = hit.json()
                if sent["stage"] == "arguments":
                    url = sent["arguments"]["url"].replace("/key", "/plain")
                    body_ = {"action": "mutate", "arguments": {"url": url}}
                else:
                    body_ = {"action": "accept"}
                return 200, [("Content-Type", "application/json")], json.dumps(body_).encode()
            if body == "slow":
                time.sleep(3)
                return 200, [("Content-Type", "application/json")], b'{"action": "accept"}'
            raw = body if isinstance(body, bytes) else json.dumps(body).encode()
            return 200, [("Content-Type", "application/json")], raw

        return answer

    return {("POST", path): route(body) for path, body in answers.items()}


FILTER_ANSWERS = {
    "/accept": {"action": "accept"},
    "/reject": {"action": "reject", "reason": "no calls to the staging host"},
    "/mutate-args": "mutate-args",
    "/mutate-bad": {"action": "mutate", "arguments": {"url": 42}},
    "/mutate-result": {"action": "mutate", "result": {"success": True, "text": "filtered"}},
    "/garbage": b"<html>oops</html>",
    "/slow": "slow",
}


@pytest.fixture
def filters() -> Iterator[HttpServer]:
    with serving(FILTER, _filter_routes(FILTER_ANSWERS)) as server:
        yield server


def use_filter(server: HttpServer, path: str, **more: Any) -> None:
    configure(
        "http",
        private_allowed=[PAGES],
        filter_url=server.url(path),
        filter_private_hosts=[FILTER],
        **more,
    )


def audit_guards(call: ToolCall) -> list[dict[str, str]]:
    record = AuditRecord.objects.get(kind=AuditRecord.Kind.CALL, tool_call=call)
    return record.detail.get("guards", [])


# --- secrets -----------------------------------------------------------------------------------
def test_a_key_in_a_result_is_redacted_and_audited_without_its_value(user, pages) -> None:
    call = run_tool("http_request", user=user, url=pages.url("/key"))
    result = ok(call)
    assert result["text"] == "deploy with aws_access_key_id=[REDACTED:AWS Access Key] please"
    assert AWS not in json.dumps(call.result)
    guards = audit_guards(call)
    assert guards == [
        {
            "stage": "result",
            "guard": "secrets",
            "kind": "AWS Access Key",
            "where": "result.text",
            "action": "redact",
        }
    ]
    assert AWS not in json.dumps(AuditRecord.objects.get(tool_call=call).detail)


def test_a_result_guard_set_to_block_withholds_the_result(user, pages) -> None:
    configure("http", private_allowed=[PAGES], guard_secrets_result="block")
    call = run_tool("http_request", user=user, url=pages.url("/key"))
    assert call.status == ToolCall.Status.FAILED
    assert call.error == (
        "guard: the result carried AWS Access Key (result.text); this tool group withholds it"
    )
    assert AWS not in json.dumps(call.result)


def test_an_argument_carrying_a_token_waits_for_a_person_with_the_reason(user, pages) -> None:
    call = run_tool(
        "http_request", user=user, url=pages.url("/plain"), method="POST", body=f"t={GITHUB}"
    )
    assert call.status == ToolCall.Status.AWAITING_APPROVAL
    assert call.approval_mode == "requester"
    assert call.policy_reason == "the arguments carry GitHub Token (arguments.body)"
    assert call.arguments["body"] == f"t={GITHUB}"  # the person sees what would go out
    assert audit_guards(call)[0]["action"] == "approval"
    from tools_app.events import render_toolcall_card

    assert "the arguments carry GitHub Token (arguments.body)" in render_toolcall_card(call)
    assert pages.hits == []


@pytest.mark.parametrize(
    ("action", "status"),
    [("block", ToolCall.Status.DENIED), ("redact", ToolCall.Status.SUCCEEDED)],
)
def test_the_argument_guard_s_other_actions(user, pages, action, status) -> None:
    configure("http", private_allowed=[PAGES], guard_secrets_arguments=action)
    call = run_tool(
        "http_request", user=user, url=pages.url("/plain"), method="POST", body=f"t={GITHUB}"
    )
    assert call.status == status, call.error
    if action == "block":
        assert call.policy_verdict == "guard"
        assert call.error == (
            "guard: the arguments carry GitHub Token (arguments.body); this tool group refuses them"
        )
        assert pages.hits == []
    else:
        assert pages.hits[-1].body == b"t=[REDACTED:GitHub Token]"


@pytest.mark.parametrize("action", ["block", "redact"])
def test_an_edit_made_while_approving_goes_through_the_argument_guards(user, pages, action) -> None:
    from tools_app.services.approval import ApprovalError, toolcall_decide

    configure("http", private_allowed=[PAGES], guard_secrets_arguments=action)
    ToolFunctionConfig.objects.create(name="http_request", approval_mode="requester")
    call = run_tool("http_request", user=user, url=pages.url("/plain"), method="POST", body="t")
    assert call.status == ToolCall.Status.AWAITING_APPROVAL
    edited = {"url": pages.url("/plain"), "method": "POST", "body": f"t={GITHUB}"}
    if action == "block":
        with pytest.raises(ApprovalError, match="guard: the arguments carry GitHub Token"):
            toolcall_decide(user=user, call_id=call.pk, approve=True, arguments=edited)
        assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.AWAITING_APPROVAL
    else:
        toolcall_decide(user=user, call_id=call.pk, approve=True, arguments=edited)
        assert ToolCall.objects.get(pk=call.pk).arguments["body"] == "t=[REDACTED:GitHub Token]"
    assert GITHUB not in json.dumps(list(AuditRecord.objects.values_list("detail", flat=True)))
    assert pages.hits == []


# --- personal data ------------------------------------------------------------------------------
def test_personal_data_passes_by_default_and_is_redacted_when_switched_on(user, pages) -> None:
    plain = ok(run_tool("http_request", user=user, url=pages.url("/pii")))
    assert "alice@example.org" in plain["text"]
    configure("http", private_allowed=[PAGES], guard_pii_result="redact")
    redacted = ok(run_tool("http_request", user=user, url=pages.url("/pii")))
    assert redacted["text"] == (
        "write to [REDACTED:Email Address] or card [REDACTED:Payment Card Number]"
    )


def test_personal_data_in_arguments_can_wait_for_a_person(user, pages) -> None:
    configure("http", private_allowed=[PAGES], guard_pii_arguments="approval")
    call = run_tool(
        "http_request", user=user, url=pages.url("/plain"), method="POST", body="bob@example.org"
    )
    assert call.status == ToolCall.Status.AWAITING_APPROVAL
    assert "Email Address (arguments.body)" in call.policy_reason


# --- filter webhooks ----------------------------------------------------------------------------
def test_a_filter_that_accepts_is_asked_twice_and_signed(user, pages, filters) -> None:
    use_filter(filters, "/accept", filter_secret="s3cret-filter-key")
    call = run_tool("http_request", user=user, url=pages.url("/plain"))
    assert ok(call)["text"] == "nothing to see"
    stages = [hit.json()["stage"] for hit in filters.hits]
    assert stages == ["arguments", "result"]
    first = filters.hits[0]
    stamp = int(first.headers["x-cc-timestamp"])
    assert first.headers["x-cc-signature"] == signature("s3cret-filter-key", stamp, first.body)
    assert first.json()["arguments"] == {"url": pages.url("/plain")}
    assert [g["kind"] for g in audit_guards(call)] == ["accept", "accept"]


def test_a_filter_that_rejects_ends_the_call_with_its_reason(user, pages, filters) -> None:
    use_filter(filters, "/reject")
    call = run_tool("http_request", user=user, url=pages.url("/plain"))
    assert call.status == ToolCall.Status.DENIED
    assert call.error == "rejected by the filter webhook: no calls to the staging host"
    assert call.result == {"success": False, "error": call.error}
    assert pages.hits == []


def test_a_filter_that_mutates_arguments_is_validated_again(user, pages, filters) -> None:
    use_filter(filters, "/mutate-args")
    call = run_tool("http_request", user=user, url=pages.url("/key"))
    assert call.arguments == {"url": pages.url("/plain")}
    assert ok(call)["text"] == "nothing to see"
    assert [h.path for h in pages.hits] == ["/plain"]
    use_filter(filters, "/mutate-bad")
    bad = run_tool("http_request", user=user, url=pages.url("/key"))
    assert bad.status == ToolCall.Status.DENIED
    assert bad.error.startswith("invalid arguments for http_request after the guards: 'url'")


def test_a_filter_that_mutates_the_result(user, pages, filters) -> None:
    use_filter(filters, "/mutate-result")
    # The arguments stage gets the same "mutate" answer without "arguments": a failure,
    # and this group fails open, so the call goes on to the result stage.
    configure(
        "http",
        private_allowed=[PAGES],
        filter_url=filters.url("/mutate-result"),
        filter_private_hosts=[FILTER],
        filter_on_failure="open",
    )
    call = run_tool("http_request", user=user, url=pages.url("/plain"))
    assert call.result["text"] == "filtered" and call.result["success"] is True


@pytest.mark.parametrize("path", ["/slow", "/garbage"])
def test_a_failing_filter_fails_closed_or_open(user, pages, filters, path) -> None:
    use_filter(filters, path, filter_timeout_seconds=1)
    closed = run_tool("http_request", user=user, url=pages.url("/plain"))
    assert closed.status == ToolCall.Status.DENIED
    assert closed.error.startswith("the filter webhook could not decide on this call (")
    assert pages.hits == []
    use_filter(filters, path, filter_timeout_seconds=1, filter_on_failure="open")
    opened = run_tool("http_request", user=user, url=pages.url("/plain"))
    assert ok(opened)["text"] == "nothing to see"
    assert {g["kind"] for g in audit_guards(opened)} == {"failed"}


# --- the agent loop and slash commands ----------------------------------------------------------
def _tool_messages(request: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in request["messages"] if m["role"] in ("tool", "user"))


@pytest.mark.modes
def test_the_model_reads_the_key_redacted(worker, user, conversation, llm, provider, pages):
    llm.script(Reply(calls=[Call("http_request", {"url": pages.url("/key")})]), Reply(text="done"))
    turn = wait_turn(turn_start(conversation=conversation, user_id=user.pk, text="get it").pk)
    assert turn.status == Turn.Status.SUCCEEDED, turn.error
    seen = _tool_messages(llm.requests[1])
    assert "[REDACTED:AWS Access Key]" in seen and AWS not in seen


@pytest.mark.modes
def test_a_slash_command_s_result_reaches_the_model_redacted(
    worker, user, conversation, llm, provider, pages
):
    text = f"/http GET {pages.url('/key')}"
    turn = wait_turn(turn_start(conversation=conversation, user_id=user.pk, text=text).pk)
    assert turn.status == Turn.Status.SUCCEEDED, turn.error
    call = ToolCall.objects.get(turn=turn)
    assert call.source == ToolCall.Source.SLASH
    assert AWS not in json.dumps(call.result)
    llm.script(Reply(text="ok"))
    wait_turn(turn_start(conversation=conversation, user_id=user.pk, text="what was it?").pk)
    seen = _tool_messages(llm.requests[-1])
    assert "[REDACTED:AWS Access Key]" in seen and AWS not in seen
