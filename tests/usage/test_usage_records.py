"""Every model round leaves a usage record: tokens as each provider's stream reports them
(OpenAI-compatible ``stream_options.include_usage``, Anthropic's message events), estimated and
marked so when a server reports none, priced at the admins' prices, with its timings."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth.models import Group

from chat_app.models import Message, ModelPrice, Provider, Turn, UsageRecord, UsageRecordGroup
from chat_app.services.turns import turn_start
from tests.conftest import wait_turn
from tests.llm_server import Call, Reply, ScriptedLLM, Usage

pytestmark = [pytest.mark.modes]


def run(conversation, user, text: str) -> Turn:
    return wait_turn(turn_start(conversation=conversation, user_id=user.pk, text=text).pk)


def use(provider: Provider, llm: ScriptedLLM, kind: str) -> None:
    provider.kind = kind
    provider.base_url = llm.openai_base_url if kind == "openai" else llm.anthropic_base_url
    provider.save()


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_it_records_the_usage_each_stream_format_reports_and_prices_it(
    worker, conversation, user, llm, provider, kind
):
    use(provider, llm, kind)
    support = Group.objects.create(name="support")
    user.groups.add(support)
    ModelPrice.objects.create(
        model="scripted-model",
        input_per_million=Decimal("3"),
        output_per_million=Decimal("15"),
        cached_per_million=Decimal("0.30"),
    )
    llm.script(
        Reply(
            text="Checking.",
            calls=[Call("current_time", {"timezone": "UTC"})],
            usage=Usage(input=1200, output=40, cached=1000),
        ),
        Reply(text="It is noon.", usage=Usage(input=1300, output=10), delay=0.05),
    )
    turn = run(conversation, user, "what time is it?")
    assert turn.status == Turn.Status.SUCCEEDED, turn.error

    first, second = UsageRecord.objects.filter(turn=turn).order_by("id")
    assert (first.input_tokens, first.output_tokens, first.cached_tokens) == (1200, 40, 1000)
    assert (second.input_tokens, second.output_tokens, second.cached_tokens) == (1300, 10, 0)
    assert not first.estimated and not second.estimated
    # 200 uncached x $3 + 1000 cached x $0.30 + 40 out x $15, per million
    assert first.cost == Decimal("0.001500") and first.priced
    assert second.cost == Decimal("0.004050")  # 1300 x 3 + 10 x 15
    assert first.provider_kind == kind and first.model == "scripted-model"
    assert first.source == Turn.Source.CHAT and first.username == "alice"
    assert first.agent_name and first.conversation_id == conversation.pk
    assert first.outcome == UsageRecord.Outcome.OK
    assert second.first_token_ms is not None and second.first_token_ms >= 40
    assert second.duration_ms >= second.first_token_ms
    assert {g.name for g in first.groups.all()} == {"support", "Everyone"}
    share = UsageRecordGroup.objects.get(record=first, group=support)
    assert share.tokens == 1240 and share.cost == first.cost

    answer = Message.objects.get(turn=turn, role="assistant", content="It is noon.")
    assert answer.usage == {
        "input_tokens": 1300,
        "output_tokens": 10,
        "model": "scripted-model",
        "cost": "0.004050",
    }


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_server_that_reports_no_usage_is_estimated_and_marked_so(
    worker, conversation, user, provider, kind
):
    with ScriptedLLM(report_usage=False) as llm:
        use(provider, llm, kind)
        llm.script(Reply(text="A reply of about ten tokens, counted from its text."))
        turn = run(conversation, user, "hello")
    assert turn.status == Turn.Status.SUCCEEDED, turn.error
    record = UsageRecord.objects.get(turn=turn)
    assert record.estimated
    assert record.output_tokens == 13  # 51 characters, four a token
    assert record.input_tokens > 20  # the system prompt and the message
    assert not record.priced and record.cost == 0
    message = Message.objects.get(turn=turn, role="assistant")
    assert message.usage["estimated"] is True and "cost" not in message.usage


def test_a_providers_own_price_wins_over_the_price_for_any_provider(
    worker, conversation, user, llm, provider
):
    ModelPrice.objects.create(model="scripted-model", input_per_million=1, output_per_million=1)
    ModelPrice.objects.create(
        provider=provider, model="scripted-model", input_per_million=10, output_per_million=20
    )
    llm.script(Reply(text="ok", usage=Usage(input=100_000, output=1000)))
    turn = run(conversation, user, "price me")
    record = UsageRecord.objects.get(turn=turn)
    assert record.cost == Decimal("1.020000")  # 0.1 M x $10 + 0.001 M x $20


def test_a_turn_a_schedule_starts_is_recorded_with_its_source(
    worker, conversation, user, llm, provider
):
    llm.script(Reply(text="Morning summary.", usage=Usage(input=50, output=5)))
    turn = turn_start(
        conversation=conversation, user_id=user.pk, text="summarise", source=Turn.Source.SCHEDULE
    )
    wait_turn(turn.pk)
    assert UsageRecord.objects.get(turn=turn).source == Turn.Source.SCHEDULE


def test_a_stopped_stream_is_recorded_as_stopped_with_estimated_tokens(
    worker, conversation, user, llm, provider
):
    from chat_app.services.turns import turn_stop
    from tests.helpers import wait_for

    llm.script(Reply(text="partial answer before a stall", hang_after_text=True))
    turn = turn_start(conversation=conversation, user_id=user.pk, text="go")
    wait_for(
        lambda: Message.objects.filter(turn=turn, role="assistant", content__contains="stall"),
        timeout=10,
        message="the partial reply to be stored",
    )
    turn_stop(turn=turn)
    wait_turn(turn.pk)
    record = UsageRecord.objects.get(turn=turn)
    assert record.outcome == UsageRecord.Outcome.CANCELLED and record.estimated
    assert record.output_tokens == 8  # "partial answer before a stall": 29 characters
