"""Retrying a model request after a transient failure, as an admin set it per provider.

Rate limits (429), overloads and server errors (5xx, Anthropic's 529), connections refused,
reset or stalled, and streams that arrive garbled or cut off are worth another try; a refused
key or a bad request is not (``ProviderError.retryable`` decides). Waits grow exponentially
with jitter from the provider's ``retry_backoff_seconds``; a server's ``Retry-After`` wins.
The waits are plain ``asyncio.sleep``: Stop cancels a turn that is waiting to retry at once.
Built on tenacity, which owns the bookkeeping (attempt counting, stop and wait policies).
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import tenacity
from django.utils.translation import gettext

from chat_app.providers import ProviderError

T = TypeVar("T")

# The longest wait we accept from a server's Retry-After; asking for more fails the turn with
# words that say so instead of leaving the person staring at a spinner.
RETRY_AFTER_CAP_SECONDS = 120.0
BACKOFF_CAP_SECONDS = 60.0


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 3
    backoff_seconds: float = 1.0

    @property
    def max_attempts(self) -> int:
        return self.max_retries + 1


@dataclass(frozen=True)
class RetryNotice:
    """What the person sees while we wait: the attempt that failed and why."""

    attempt: int  # the attempt that just failed (1-based)
    max_attempts: int
    wait_seconds: float
    error: ProviderError

    def text(self) -> str:
        return gettext(
            "retrying in %(wait)s s (attempt %(attempt)s of %(attempts)s): %(error)s"
        ) % {
            "wait": f"{self.wait_seconds:.1f}",
            "attempt": self.attempt + 1,
            "attempts": self.max_attempts,
            "error": self.error.message,
        }


def backoff_seconds(policy: RetryPolicy, attempt: int, error: BaseException | None) -> float:
    """The wait after failed attempt number ``attempt`` (1-based)."""
    if isinstance(error, ProviderError) and error.retry_after is not None:
        return min(error.retry_after, RETRY_AFTER_CAP_SECONDS)
    base = min(policy.backoff_seconds * 2 ** (attempt - 1), BACKOFF_CAP_SECONDS)
    return base / 2 + random.random() * base / 2  # noqa: S311 - jitter, not security


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, ProviderError) and exc.retryable


class _AsksTooLong(tenacity.stop.stop_base):
    """Stop when the server asks for a wait longer than we are willing to give."""

    def __call__(self, retry_state: tenacity.RetryCallState) -> bool:
        outcome = retry_state.outcome
        exc = outcome.exception() if outcome is not None else None
        return (
            isinstance(exc, ProviderError)
            and exc.retry_after is not None
            and exc.retry_after > RETRY_AFTER_CAP_SECONDS
        )


async def call_with_retries(
    attempt: Callable[[int], Awaitable[T]],
    *,
    policy: RetryPolicy,
    on_retry: Callable[[RetryNotice], Awaitable[None]] | None = None,
) -> T:
    """Run ``attempt(number)`` until it succeeds, fails for good, or the tries run out.

    The last error is raised with the number of attempts added to its message."""

    async def before_sleep(state: tenacity.RetryCallState) -> None:
        if on_retry is None or state.outcome is None or state.next_action is None:
            return
        error = state.outcome.exception()
        assert isinstance(error, ProviderError)
        await on_retry(
            RetryNotice(
                attempt=state.attempt_number,
                max_attempts=policy.max_attempts,
                wait_seconds=state.next_action.sleep,
                error=error,
            )
        )

    retrying = tenacity.AsyncRetrying(
        stop=tenacity.stop_after_attempt(policy.max_attempts) | _AsksTooLong(),
        wait=lambda state: backoff_seconds(
            policy,
            state.attempt_number,
            state.outcome.exception() if state.outcome is not None else None,
        ),
        retry=tenacity.retry_if_exception(_retryable),
        before_sleep=before_sleep,
        reraise=True,
    )
    attempts = 0
    try:
        async for try_ in retrying:
            with try_:
                attempts = try_.retry_state.attempt_number
                return await attempt(attempts)
    except ProviderError as exc:
        if exc.retry_after is not None and exc.retry_after > RETRY_AFTER_CAP_SECONDS:
            exc.message = (
                f"{exc.message} (the server asked to wait {exc.retry_after:.0f} s before "
                f"retrying, longer than the {RETRY_AFTER_CAP_SECONDS:.0f} s Control Center waits)"
            )
        elif exc.retryable and attempts > 1:
            exc.message = f"{exc.message} (gave up after {attempts} attempts)"
        raise
    raise AssertionError("unreachable: tenacity either returns or raises")  # pragma: no cover
