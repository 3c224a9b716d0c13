"""/v1 retries with the official openai SDK (issue 39): a request sent again — with the same
``Idempotency-Key``, or retried by the SDK itself after a timeout — joins the turn its first
attempt started: one conversation, one tool call. A key is the token's own."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import httpx2
import openai
import pytest
from django.contrib.auth.models import Group
from django.utils import timezone

from chat_app.models import Conversation, Turn
from platform_app.api.v1 import retries
from platform_app.models import ApiRequestKey
from tests.api.conftest import token_for
from tests.e2e.conftest import run_app_server
from tests.helpers import wait_for
from tests.llm_server import Call, Reply
from tools_app.models import ToolCall
from tools_app.services.settings import function_approval_set


def client(url: str, token: str, **options: Any) -> openai.OpenAI:
    options.setdefault("max_retries", 0)
    options.setdefault("timeout", 60)
    return openai.OpenAI(base_url=f"{url}/v1", api_key=token, **options)


def ask(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def key(value: str) -> dict[str, str]:
    return {"Idempotency-Key": value}


@pytest.mark.modes
def test_it_answers_a_request_sent_twice_with_one_key_from_one_turn(
    api_server: str, llm: Any, provider: Any, raw_token: str
) -> None:
    llm.script(
        Reply(calls=[Call("current_time", {"timezone": "UTC"})]),
        Reply(text="It is noon."),
    )
    sdk = client(api_server, raw_token)

    first = sdk.chat.completions.with_raw_response.create(
        model="General", messages=ask("Time?"), extra_headers=key("order-1")
    )
    again = sdk.chat.completions.with_raw_response.create(
        model="General", messages=ask("Time?"), extra_headers=key("order-1")
    )

    one, two = first.parse(), again.parse()
    assert one.choices[0].message.content.endswith("It is noon.")
    assert two.choices[0].message.content == one.choices[0].message.content
    assert two.id == one.id and two.created == one.created
    assert again.headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in first.headers
    assert Conversation.objects.count() == 1 and Turn.objects.count() == 1
    assert ToolCall.objects.count() == 1
    assert len(llm.requests) == 2  # the tool round and the answer, once


@pytest.mark.modes
def test_it_joins_the_sdks_retry_after_a_timeout_while_waiting_for_approval(
    api_server: str, llm: Any, provider: Any, user: Any, other_user: Any, staff_user: Any
) -> None:
    ops = Group.objects.create(name="ops")
    other_user.groups.add(ops)
    function_approval_set(
        user=staff_user, tool="current_time", mode="approver", approver_group_ids=[ops.pk]
    )
    llm.script(
        Reply(calls=[Call("current_time", {"timezone": "UTC"})]),
        Reply(text="Approved and done."),
    )
    approver = token_for(other_user, scopes=["approve", "read"])
    # No key from the client: the SDK's own retry (same body, X-Stainless-Retry-Count: 1).
    sdk = client(api_server, token_for(user), max_retries=2, timeout=5)
    got: dict[str, Any] = {}

    def call() -> None:
        try:
            got["reply"] = sdk.chat.completions.create(model="General", messages=ask("Time?"))
        except Exception as exc:  # shown by the assertion below
            got["error"] = exc

    caller = threading.Thread(target=call)
    caller.start()
    waiting = wait_for(
        lambda: ToolCall.objects.filter(status="awaiting_approval").first(),
        timeout=30,
        message="the call to wait for an approver",
    )
    wait_for(
        lambda: ApiRequestKey.objects.filter(attempts__gte=2).exists(),
        timeout=30,
        message="the SDK's retry to join the turn",
    )
    assert Turn.objects.get().status == Turn.Status.RUNNING  # the first attempt's leaving
    approved = httpx2.post(
        f"{api_server}/api/tool-calls/{waiting.pk}/approve",
        json={},
        headers={"Authorization": f"Bearer {approver}"},
        timeout=30,
    )
    assert approved.status_code == 200, approved.text
    caller.join(timeout=30)

    assert not caller.is_alive()
    assert "error" not in got, got.get("error")
    assert got["reply"].choices[0].message.content.endswith("Approved and done.")
    assert Conversation.objects.count() == 1
    turn = Turn.objects.get()
    assert turn.status == Turn.Status.SUCCEEDED
    assert ToolCall.objects.get().status == "succeeded"


def test_a_streamed_retry_gets_the_same_turns_stream(
    api_server: str, llm: Any, provider: Any, raw_token: str
) -> None:
    llm.script(Reply(text="Streamed once.", chunk_size=4))
    sdk = client(api_server, raw_token)

    def streamed() -> tuple[str, str]:
        chunks = list(
            sdk.chat.completions.create(
                model="General", messages=ask("Stream"), stream=True, extra_headers=key("s-1")
            )
        )
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        return chunks[0].id, text

    first, again = streamed(), streamed()

    assert first == again and first[1] == "Streamed once."
    assert Turn.objects.count() == 1 and len(llm.requests) == 1


def test_a_turn_whose_client_left_and_did_not_retry_stops_after_the_grace_time(
    worker_process: Any, llm: Any, provider: Any, user: Any, other_user: Any, staff_user: Any
) -> None:
    ops = Group.objects.create(name="ops")
    other_user.groups.add(ops)
    function_approval_set(
        user=staff_user, tool="current_time", mode="approver", approver_group_ids=[ops.pk]
    )
    llm.script(Reply(calls=[Call("current_time", {"timezone": "UTC"})]), Reply(text="late"))
    with run_app_server(
        "--no-beat", log_name="test-server-grace.log", V1_DISCONNECT_GRACE_SECONDS="4"
    ) as url:
        sdk = client(url, token_for(user), timeout=3)
        with pytest.raises(openai.APITimeoutError):
            sdk.chat.completions.create(model="General", messages=ask("Time?"))
        assert Turn.objects.get().status == Turn.Status.RUNNING  # within the grace time
        turn = wait_for(
            lambda: Turn.objects.filter(status=Turn.Status.CANCELLED).first(),
            timeout=20,
            message="the turn to stop after the grace time",
        )
    assert ToolCall.objects.get(turn=turn).status != "succeeded"


def test_a_key_reused_with_another_body_is_refused(
    api_server: str, llm: Any, provider: Any, raw_token: str
) -> None:
    llm.set_default(Reply(text="Hi."))
    sdk = client(api_server, raw_token)
    sdk.chat.completions.create(model="General", messages=ask("hi"), extra_headers=key("k-1"))

    with pytest.raises(openai.UnprocessableEntityError) as refused:
        sdk.chat.completions.create(
            model="General", messages=ask("something else"), extra_headers=key("k-1")
        )

    assert refused.value.status_code == 422
    assert refused.value.body["code"] == "idempotency_key_reused"
    assert Turn.objects.count() == 1
    # A fresh key is a new request.
    sdk.chat.completions.create(model="General", messages=ask("hi"), extra_headers=key("k-2"))
    assert Turn.objects.count() == 2


def test_another_tokens_key_and_body_are_not_shared(
    api_server: str, llm: Any, provider: Any, user: Any, other_user: Any
) -> None:
    llm.set_default(Reply(text="Yours."))
    mine = client(api_server, token_for(user))
    theirs = client(api_server, token_for(other_user))
    first = mine.chat.completions.create(
        model="General", messages=ask("secret plans"), extra_headers=key("shared")
    )

    # The same key, and the same body dressed as the SDK's retry, from another person's token.
    by_key = theirs.chat.completions.with_raw_response.create(
        model="General", messages=ask("secret plans"), extra_headers=key("shared")
    )
    by_retry = theirs.chat.completions.with_raw_response.create(
        model="General",
        messages=ask("secret plans"),
        extra_headers={"X-Stainless-Retry-Count": "1"},
    )

    mine_id = first.model_extra["controlcenter"]["conversation_id"]
    for response in (by_key, by_retry):
        assert "idempotent-replayed" not in response.headers
        extra = response.parse().model_extra["controlcenter"]
        assert extra["conversation_id"] != mine_id
        assert Conversation.objects.get(pk=extra["conversation_id"]).owner == other_user
    assert Turn.objects.count() == 3
    # The same person's second token does not share the first token's keys either.
    again = client(api_server, token_for(user, name="second")).chat.completions.create(
        model="General", messages=ask("secret plans"), extra_headers=key("shared")
    )
    assert again.model_extra["controlcenter"]["conversation_id"] != mine_id


def test_a_bad_key_is_refused(api_server: str, provider: Any, raw_token: str) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        client(api_server, raw_token).chat.completions.create(
            model="General", messages=ask("hi"), extra_headers=key("x" * 256)
        )
    assert refused.value.body["code"] == "invalid_idempotency_key"
    assert not Turn.objects.exists()


@pytest.mark.django_db
def test_it_stops_a_left_turn_only_when_no_retry_joined(user: Any) -> None:
    from platform_app.api_tokens import api_token_create

    token = api_token_create(user=user, name="t")[0]
    conversation = Conversation.objects.create(owner=user)
    turn = Turn.objects.create(conversation=conversation, status=Turn.Status.SUCCEEDED)
    first = retries.request_claim(token_id=token.pk, key="k", body="b", sdk_retry=False)
    retries.request_started(
        claim_id=first.id, conversation_id=conversation.pk, turn_id=turn.pk, model="M", trace=True
    )

    joined = retries.request_claim(token_id=token.pk, key="k", body="b", sdk_retry=False)
    retries.request_left(first.id, first.attempts, 0)  # a late mark from the first attempt

    assert joined.joined and joined.turn_id == turn.pk and joined.attempts == 2
    assert ApiRequestKey.objects.get().stop_after is None  # the retry holds the turn
    assert not retries.request_stop_if_due(first.id)
    retries.request_left(joined.id, joined.attempts, 0)
    ApiRequestKey.objects.update(stop_after=timezone.now() - timedelta(seconds=1))
    assert retries.request_stop_if_due(joined.id)
    assert not retries.request_stop_if_due(joined.id)  # once


@pytest.mark.django_db
def test_keys_expire(user: Any, settings: Any) -> None:
    from platform_app.api_tokens import api_token_create

    token = api_token_create(user=user, name="t")[0]
    old = retries.request_claim(token_id=token.pk, key="k", body="b", sdk_retry=False)
    ApiRequestKey.objects.filter(pk=old.id).update(
        started=True, created_at=timezone.now() - timedelta(seconds=settings.V1_IDEMPOTENCY_SECONDS)
    )

    fresh = retries.request_claim(token_id=token.pk, key="k", body="other", sdk_retry=False)

    assert not fresh.joined and ApiRequestKey.objects.get().pk == fresh.id
    # A token that sends nothing more has its expired keys deleted by the hourly sweep.
    ApiRequestKey.objects.filter(pk=fresh.id).update(created_at=timezone.now() - timedelta(days=2))
    other = api_token_create(user=user, name="other")[0]
    kept = retries.request_claim(token_id=other.pk, key="k", body="b", sdk_retry=False)
    assert ApiRequestKey.objects.count() == 2  # another token's claim leaves them alone

    assert retries.request_keys_sweep() == 1
    assert list(ApiRequestKey.objects.values_list("pk", flat=True)) == [kept.id]


def test_a_body_hashes_the_same_whatever_its_key_order() -> None:
    assert retries.body_hash({"a": 1, "b": [1, 2]}) == retries.body_hash({"b": [1, 2], "a": 1})
    assert retries.body_hash({"a": 1}) != retries.body_hash({"a": 2})
    assert retries.sdk_retry("1") and retries.sdk_retry("3") and not retries.sdk_retry("0")
    assert not retries.sdk_retry("") and not retries.sdk_retry("x")
