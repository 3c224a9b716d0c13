"""What a model round cost: its usage record, its price, and the gate quotas hang on.

Every round that reached the model leaves one ``UsageRecord`` (two INSERTs: the record and
its shares in the person's groups), written by ``round_complete`` in the round's database
thread. Tokens are the provider's when it reports them (OpenAI-compatible streams with
``stream_options.include_usage``, Anthropic's message events), else estimated from the text
(four characters a token) and marked so. The cost uses the admin's price for the model
(``ModelPrice``) at the time; prices and the person's groups are read once per configuration
token (``tools_app.selectors.config_memo``), so the hot path makes no query for them.

The gate: an app above (the platform's quotas) registers ``round_gate_set(check)``;
``round_prepare`` asks it before every model round, whatever started the turn (the chat
page, a schedule, a subagent, the API), and ends the turn with its words when it refuses.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol

from chat_app.models import ModelPrice, Turn, UsageRecord, UsageRecordGroup
from chat_app.providers import ModelReply
from chat_app.services.live import Stopped
from infra import metrics
from tools_app import selectors
from tools_app.services.grants import person_group_ids

if TYPE_CHECKING:
    from chat_app.models import Agent, Provider
    from chat_app.providers.base import ChatMessage, ToolSpec


class RoundPlan(Protocol):
    """What a round's usage record reads of the round (``chat_app.services.loop.RoundPlan``
    has it; named here so this module does not import the loop that imports it)."""

    turn_id: int
    conversation_id: int
    user_id: int | None
    provider: Provider
    agent: Agent
    model: str
    source: str
    username: str
    system: str
    history: list[ChatMessage] | None
    specs: list[ToolSpec] | None
    stream_started: float
    first_token_at: float | None
    stream_ended: float
    trace_attributes: dict[str, Any]


logger = logging.getLogger(__name__)

MILLION = Decimal(1_000_000)
CHARS_PER_TOKEN = 4  # the estimate when a server reports no usage


@dataclass(frozen=True)
class Price:
    input: Decimal
    output: Decimal
    cached: Decimal


@dataclass
class RoundUsage:
    """One round's figures, as recorded."""

    input_tokens: int
    output_tokens: int
    cached_tokens: int
    estimated: bool
    cost: Decimal
    priced: bool

    def for_message(self, model: str) -> dict[str, Any]:
        """What ``Message.usage`` keeps (and the page shows under the reply)."""
        out: dict[str, Any] = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "model": model,
        }
        if self.cached_tokens:
            out["cached_tokens"] = self.cached_tokens
        if self.priced:
            out["cost"] = str(self.cost)
        if self.estimated:
            out["estimated"] = True
        return out


# --- the gate before a round ---------------------------------------------------------------
RoundGate = Callable[[Turn], "str | None"]
_gate: RoundGate | None = None


def round_gate_set(check: RoundGate | None) -> None:
    """``check(turn)`` returns the words to end the turn with, or None to let the round run.
    Set at ready() by the app that owns quotas."""
    global _gate
    _gate = check


def round_gate(turn: Turn) -> str | None:
    if _gate is None:
        return None
    return _gate(turn)


# --- prices and groups, per configuration token --------------------------------------------
def _prices() -> dict[tuple[int | None, str], Price]:
    out: dict[tuple[int | None, str], Price] = {}
    for row in ModelPrice.objects.order_by():
        cached = row.cached_per_million
        out[(row.provider_id, row.model)] = Price(
            input=row.input_per_million,
            output=row.output_per_million,
            cached=row.input_per_million if cached is None else cached,
        )
    return out


def price_for(provider_id: int | None, model: str) -> Price | None:
    """The provider's own price for the model, else the any-provider one, else None."""
    prices = selectors.config_memo(("usage", "prices"), _prices)
    return prices.get((provider_id, model)) or prices.get((None, model))


def cost_of(price: Price | None, *, input_tokens: int, output_tokens: int, cached: int) -> Decimal:
    if price is None:
        return Decimal(0)
    cached = min(cached, input_tokens)
    total = (
        (input_tokens - cached) * price.input + cached * price.cached + output_tokens * price.output
    ) / MILLION
    return total.quantize(Decimal("0.000001"))


def user_group_ids(user_id: int | None) -> tuple[int, ...]:
    """The person's groups now, Everyone included (memberships move the token on)."""
    return () if user_id is None else person_group_ids(user_id)


# --- the record -----------------------------------------------------------------------------
def estimate_tokens(chars: int) -> int:
    return max(1, math.ceil(chars / CHARS_PER_TOKEN)) if chars else 0


def round_usage(
    *,
    provider_id: int | None,
    model: str,
    reported: dict[str, int] | None,
    prompt_chars: Callable[[], int],
    output_chars: int,
) -> RoundUsage:
    """The round's tokens and cost; ``reported``: ``ModelReply.usage`` (None or empty: the
    server said nothing, so the request's and the reply's sizes are estimated)."""
    estimated = not reported or not (reported.get("input_tokens") or reported.get("output_tokens"))
    if estimated:
        input_tokens, output_tokens, cached = estimate_tokens(prompt_chars()), 0, 0
        output_tokens = estimate_tokens(output_chars)
    else:
        assert reported is not None
        input_tokens = int(reported.get("input_tokens") or 0)
        output_tokens = int(reported.get("output_tokens") or 0)
        cached = int(reported.get("cached_tokens") or 0)
    price = price_for(provider_id, model)
    return RoundUsage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_tokens=cached,
        estimated=estimated,
        cost=cost_of(price, input_tokens=input_tokens, output_tokens=output_tokens, cached=cached),
        priced=price is not None,
    )


def usage_record(
    *,
    usage: RoundUsage,
    turn_id: int,
    conversation_id: int,
    user_id: int | None,
    username: str,
    source: str,
    provider: Any,
    model: str,
    agent: Any,
    first_token_ms: int | None,
    duration_ms: int,
    outcome: str,
) -> UsageRecord:
    """Store the round's record and its shares in the person's groups (two INSERTs), and
    count it in the metrics."""
    record = UsageRecord(
        user_id=user_id,
        username=username,
        provider_id=getattr(provider, "pk", None),
        provider_kind=getattr(provider, "kind", ""),
        model=model[:200],
        agent_id=getattr(agent, "pk", None),
        agent_name=getattr(agent, "name", "")[:100],
        conversation_id=conversation_id,
        turn_id=turn_id,
        source=source,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_tokens=usage.cached_tokens,
        estimated=usage.estimated,
        first_token_ms=first_token_ms,
        duration_ms=duration_ms,
        cost=usage.cost,
        priced=usage.priced,
        outcome=outcome,
    )
    groups = user_group_ids(user_id)
    tokens = usage.input_tokens + usage.output_tokens
    record.save(force_insert=True)
    if groups:
        UsageRecordGroup.objects.bulk_create(
            [
                UsageRecordGroup(
                    record=record,
                    group_id=group_id,
                    created_at=record.created_at,
                    tokens=tokens,
                    cost=usage.cost,
                )
                for group_id in groups
            ]
        )
    metrics.model_round(
        kind=getattr(provider, "kind", ""),
        model=model,
        outcome=outcome,
        seconds=duration_ms / 1000,
        first_token_seconds=None if first_token_ms is None else first_token_ms / 1000,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_tokens=usage.cached_tokens,
        cost=float(usage.cost),
    )
    return record


def round_record(plan: RoundPlan, text: str, outcome: ModelReply | BaseException) -> dict[str, Any]:
    """Record a model round as ``round_complete`` ends it (a round that failed before
    anything arrived cost nothing and leaves no record); returns what the message keeps."""
    if isinstance(outcome, ModelReply):
        result, reported = UsageRecord.Outcome.OK, outcome.usage
        output = len(outcome.text) + sum(len(c.arguments) + len(c.name) for c in outcome.tool_calls)
    elif text or plan.first_token_at is not None:
        result = (
            UsageRecord.Outcome.CANCELLED
            if isinstance(outcome, Stopped)
            else UsageRecord.Outcome.ERROR
        )
        reported, output = None, len(text)
    else:
        return {}
    usage = round_usage(
        provider_id=plan.provider.pk,
        model=plan.model,
        reported=reported,
        prompt_chars=lambda: _prompt_chars(plan),
        output_chars=output,
    )
    started = plan.stream_started or time.monotonic()
    ended = plan.stream_ended or time.monotonic()
    first = plan.first_token_at
    first_token_ms = None if first is None else int((first - started) * 1000)
    try:
        usage_record(
            usage=usage,
            turn_id=plan.turn_id,
            conversation_id=plan.conversation_id,
            user_id=plan.user_id,
            username=plan.username,
            source=plan.source,
            provider=plan.provider,
            model=plan.model,
            agent=plan.agent,
            first_token_ms=first_token_ms,
            duration_ms=max(0, int((ended - started) * 1000)),
            outcome=result,
        )
    except Exception:  # the figures must never cost the person their reply
        logger.exception("turn %s: recording the round's usage failed", plan.turn_id)
    plan.trace_attributes = {
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "cc.usage.cached_tokens": usage.cached_tokens,
        "cc.usage.estimated": usage.estimated,
        "cc.time_to_first_token_ms": first_token_ms if first_token_ms is not None else -1,
        "cc.round.outcome": result,
    }
    return usage.for_message(plan.model)


def _prompt_chars(plan: RoundPlan) -> int:
    """The request's size, for an estimate: the system prompt, the history, the tools."""
    size = len(plan.system)
    for message in plan.history or []:
        size += len(message.content) + sum(
            len(c.arguments) + len(c.name) for c in message.tool_calls
        )
    for spec in plan.specs or []:
        size += len(spec.name) + len(spec.description) + len(str(spec.parameters))
    return size
