"""Transient provider failures are retried with backoff, through the real SDKs over HTTP.

Each fault is produced by the scripted server on the wire: a 429 with ``Retry-After``, 5xx
answers, a TCP reset mid-stream, a data line that is not JSON, a stream that stalls. The
retry policy is the provider's (``max_retries``, ``retry_backoff_seconds``).
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterator
from email.utils import format_datetime
from typing import Any

import pytest

from chat_app.providers import ModelReply, ProviderError, TextDelta, make_provider
from chat_app.providers.base import retry_after_seconds
from chat_app.services.retry import (
    RETRY_AFTER_CAP_SECONDS,
    RetryNotice,
    RetryPolicy,
    backoff_seconds,
    call_with_retries,
)
from tests.llm_server import Reply, ScriptedLLM

KINDS = ["openai", "anthropic"]
QUICK = RetryPolicy(max_retries=2, backoff_seconds=0.05)


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


def client(llm: ScriptedLLM, kind: str, timeout: float = 5.0) -> Any:
    base_url = llm.openai_base_url if kind == "openai" else llm.anthropic_base_url
    return make_provider(kind, base_url=base_url, api_key="", model="m", timeout=timeout)


async def stream_once(provider: Any, texts: list[str]) -> ModelReply:
    async for event in provider.stream(system="", messages=[], tools=None):
        if isinstance(event, TextDelta):
            texts.append(event.text)
        elif isinstance(event, ModelReply):
            return event
    raise AssertionError("no reply")


def error_body(kind: str, message: str) -> dict[str, Any]:
    if kind == "anthropic":
        return {"type": "error", "error": {"type": "overloaded_error", "message": message}}
    return {"error": {"message": message, "type": "server_error"}}


FAULTS = {
    "429 with Retry-After": (
        lambda kind: Reply(
            error=(429, error_body(kind, "slow down")), error_headers={"Retry-After": "0.2"}
        ),
        "rate limiting or out of quota (429): slow down",
    ),
    "503": (
        lambda kind: Reply(error=(503, error_body(kind, "upstream busy"))),
        "the LLM server failed (503): upstream busy",
    ),
    "529 overloaded": (
        lambda kind: Reply(error=(529, error_body(kind, "Overloaded"))),
        "the LLM server failed (529): Overloaded",
    ),
    "connection reset mid-stream": (
        lambda kind: Reply(text="half an ans", reset_after_text=True),
        "broke mid-reply",
    ),
    "garbled SSE": (
        lambda kind: Reply(text="half", garbled_after_text="{not json at all"),
        "malformed stream event",
    ),
    "stalled stream": (
        lambda kind: Reply(text="thinking", hang_after_text=True),
        "stopped sending for 0.5 s mid-reply",
    ),
    "error event inside the stream": (
        lambda kind: Reply(
            text="Let", stream_error={"type": "overloaded_error", "message": "busy"}
        ),
        "reported an error mid-reply: busy",
    ),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fault", list(FAULTS))
async def test_a_transient_failure_is_retried_and_the_reply_arrives(
    llm: ScriptedLLM, kind: str, fault: str
) -> None:
    make_fault, words = FAULTS[fault]
    llm.script(make_fault(kind), Reply(text="all good"))
    provider = client(llm, kind, timeout=0.5)
    notices: list[RetryNotice] = []
    texts: list[str] = []

    async def note(notice: RetryNotice) -> None:
        notices.append(notice)
        texts.clear()  # the reply starts over

    reply = await call_with_retries(
        lambda attempt: stream_once(provider, texts), policy=QUICK, on_retry=note
    )
    assert reply.text == "all good" and "".join(texts) == "all good"
    assert len(llm.requests) == 2
    assert len(notices) == 1
    assert words in notices[0].error.message
    assert notices[0].text().startswith("retrying in ")
    assert "(attempt 2 of 3)" in notices[0].text()


@pytest.mark.parametrize("kind", KINDS)
async def test_it_gives_up_after_the_admin_set_number_of_tries(llm: ScriptedLLM, kind: str) -> None:
    llm.set_default(Reply(error=(503, error_body(kind, "down for maintenance"))))
    provider = client(llm, kind)
    with pytest.raises(ProviderError) as caught:
        await call_with_retries(lambda attempt: stream_once(provider, []), policy=QUICK)
    assert caught.value.message == (
        "the LLM server failed (503): down for maintenance (gave up after 3 attempts)"
    )
    assert len(llm.requests) == 3


@pytest.mark.parametrize("kind", KINDS)
async def test_it_honours_retry_after(llm: ScriptedLLM, kind: str) -> None:
    llm.script(
        Reply(error=(429, error_body(kind, "wait")), error_headers={"Retry-After": "1"}),
        Reply(text="ok"),
    )
    stamps: list[float] = []
    provider = client(llm, kind)

    async def attempt(number: int) -> ModelReply:
        stamps.append(time.monotonic())
        return await stream_once(provider, [])

    policy = RetryPolicy(max_retries=1, backoff_seconds=0.01)  # backoff alone would be ~10 ms
    assert (await call_with_retries(attempt, policy=policy)).text == "ok"
    assert stamps[1] - stamps[0] >= 0.95


def test_it_reads_retry_after_ms_and_http_dates() -> None:
    assert retry_after_seconds({"retry-after-ms": "1500"}) == 1.5
    assert retry_after_seconds({"retry-after": "7"}) == 7.0
    soon = format_datetime(datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=30))
    assert 25 <= (retry_after_seconds({"retry-after": soon}) or 0) <= 30
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


@pytest.mark.parametrize("kind", KINDS)
async def test_a_wait_longer_than_the_cap_fails_at_once_and_says_so(
    llm: ScriptedLLM, kind: str
) -> None:
    llm.script(Reply(error=(429, error_body(kind, "quota")), error_headers={"Retry-After": "3600"}))
    provider = client(llm, kind)
    with pytest.raises(ProviderError) as caught:
        await call_with_retries(lambda attempt: stream_once(provider, []), policy=QUICK)
    assert "the server asked to wait 3600 s before retrying" in caught.value.message
    assert f"longer than the {RETRY_AFTER_CAP_SECONDS:.0f} s" in caught.value.message
    assert len(llm.requests) == 1


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_a_request_the_server_refuses_is_not_retried(
    llm: ScriptedLLM, kind: str, status: int
) -> None:
    llm.set_default(Reply(error=(status, error_body(kind, "no"))))
    provider = client(llm, kind)
    with pytest.raises(ProviderError) as caught:
        await call_with_retries(lambda attempt: stream_once(provider, []), policy=QUICK)
    assert not caught.value.retryable
    assert "gave up" not in caught.value.message
    assert len(llm.requests) == 1


def test_backoff_doubles_with_jitter_and_is_capped() -> None:
    policy = RetryPolicy(max_retries=10, backoff_seconds=1.0)
    for attempt, base in [(1, 1.0), (2, 2.0), (3, 4.0), (9, 60.0)]:
        waits = [backoff_seconds(policy, attempt, None) for _ in range(50)]
        assert all(base / 2 <= w <= base for w in waits)
        assert len(set(waits)) > 1  # jittered
    told = ProviderError("x", retryable=True, retry_after=3.0)
    assert backoff_seconds(policy, 1, told) == 3.0


def test_zero_retries_means_one_attempt() -> None:
    assert RetryPolicy(max_retries=0).max_attempts == 1
