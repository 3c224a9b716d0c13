"""What recording a model round's usage costs (issue 25: ≤ 1 ms per round).

A round ends with one UPDATE of its message (its text, its state). Since usage is recorded,
the round's record comes first: the tokens and the price (``round_usage``, from the
per-token cache) and ``usage_record`` (the record and its shares in the person's groups: one
statement on PostgreSQL until issue 38, two INSERTs since, as on SQLite,
each its own commit), for a person in three groups (four with Everyone). Writing
them in the message's transaction instead (with the savepoint a failed record needs) was
measured too, and cost more: 3.6 ms against 1.7 ms added (PostgreSQL, a loaded machine), the
round trips of BEGIN, SAVEPOINT, RELEASE and COMMIT outweighing a commit saved. Timed 1,000
times each, interleaved so both see the same machine, inside ``config_pinned`` as a round
runs:

- ``close_message_update``: the UPDATE alone, as every round ran it before;
- ``close_with_usage_record``: what every round runs now;
- ``added``: the difference of their medians (and p95s): what recording adds per round.

Both modes' databases: SQLite (embedded) and PostgreSQL (distributed), each in its own
process.

    python -m bench usage_record
    python -m bench.usage_record embedded
"""

from __future__ import annotations

import os
import sys
import time
from decimal import Decimal
from typing import Any

from bench.common import emit, run_each_mode, setup_django, stats_ms

N = 1000
WARM = 50
TARGET_MS = 1.0


def measure(mode: str) -> dict[str, Any]:
    setup_django(mode)
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.db.models import F

    from chat_app.models import Agent, Conversation, Message, ModelPrice, Provider, Turn
    from chat_app.services.usage import round_usage, usage_record
    from tools_app import selectors

    user = get_user_model().objects.create_user("bench-usage")
    for name in ("support", "dev", "ops"):
        user.groups.add(Group.objects.create(name=f"bench-{name}"))
    provider = Provider.objects.create(name="bench", kind="openai", model="bench-model")
    ModelPrice.objects.create(
        model="bench-model",
        input_per_million=Decimal(3),
        output_per_million=Decimal(15),
        cached_per_million=Decimal("0.3"),
    )
    agent = Agent.objects.create(name="bench-agent")
    conversation = Conversation.objects.create(owner=user)
    turn = Turn.objects.create(conversation=conversation, user=user)
    message = Message.objects.create(conversation=conversation, turn=turn, role="assistant")
    reported = {"input_tokens": 4200, "output_tokens": 180, "cached_tokens": 3000}

    def record_once() -> None:
        usage = round_usage(
            provider_id=provider.pk,
            model="bench-model",
            reported=reported,
            prompt_chars=lambda: 0,
            output_chars=0,
        )
        usage_record(
            usage=usage,
            turn_id=turn.pk,
            conversation_id=conversation.pk,
            user_id=user.pk,
            username="bench-usage",
            source="chat",
            provider=provider,
            model="bench-model",
            agent=agent,
            first_token_ms=420,
            duration_ms=2100,
            outcome="ok",
        )

    def close_update() -> None:  # what every round did before: the message's UPDATE
        Message.objects.filter(pk=message.pk).update(
            content="It is noon.", state="complete", note="", version=F("version") + 1
        )

    def close_with_record() -> None:  # what every round does now (chat_app.services.loop)
        record_once()
        close_update()

    cases = {"close_message_update": close_update, "close_with_usage_record": close_with_record}
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for i in range(N + WARM):
        for name, work in cases.items():
            with selectors.config_pinned():  # as round_complete runs
                started = time.perf_counter()
                work()
                elapsed = time.perf_counter() - started
            if i >= WARM:
                samples[name].append(elapsed)
    out: dict[str, Any] = {"mode": mode}
    for name in cases:
        out[name] = stats_ms(samples[name])
    out["added"] = {
        key: round(out["close_with_usage_record"][key] - out["close_message_update"][key], 3)
        for key in ("median_ms", "p95_ms")
    }
    out["groups_per_person"] = 4
    out["meets_target"] = {
        f"added_median_within_{TARGET_MS}ms": out["added"]["median_ms"] <= TARGET_MS
    }
    return out


def main() -> None:
    if len(sys.argv) > 1:
        emit(measure(sys.argv[1]))
        return
    out: dict[str, Any] = {"target_ms": TARGET_MS, **run_each_mode("usage_record")}
    out["load_average"] = [round(x, 2) for x in os.getloadavg()]
    emit(out)


if __name__ == "__main__":
    main()
