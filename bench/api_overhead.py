"""What ``/v1/chat/completions`` costs on top of the chat's own websocket, for the same turn.

A plain turn — one model reply, the scripted LLM (its own process) thinking ``DELAY`` seconds
and streaming a few dozen tokens — is run in fresh conversations of their own users, either
way:

- ``websocket``: the message sent over the chat page's websocket (opened before the clock
  starts), until the ``turn`` event says it ended — the baseline, as ``bench.concurrency``;
- ``v1``: ``POST /v1/chat/completions`` with the person's API token and ``conversation_id``
  (the connection opened and kept alive before the clock starts, as an SDK's pool does),
  until the whole ``chat.completion`` arrives: token check and rate limit, request parsing,
  the turn, following its events, reading the outcome.

At 1 (``ALONE_REPEATS`` times, the two ways alternated) and 50 at once (each way twice,
alternated, so drift hits both alike). Reported: p50/p95 per way and the ratios v1 ÷
websocket (target ≤ 1.1). Embedded (one ``manage.py serve``) and distributed (web, agent
runner and tools worker on Redis and PostgreSQL: ``BENCH_REDIS_URL``, ``BENCH_DATABASE_URL``).

    python -m bench.api_overhead                 # both modes
    python -m bench.api_overhead embedded 1,50   # one mode, chosen sizes
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from bench.common import emit, free_port, run_each_mode, setup_django, stop
from bench.concurrency import DELAY, Gate, make_people, one_turn, start_app, start_llm, summary

SIZES = [1, 50]
ALONE_REPEATS = 6
ROUNDS_AT_ONCE = 2
TURN_TIMEOUT = 180.0
TARGET = 1.1


def tokens_for(people: list[tuple[int, str]]) -> list[str]:
    """An API token (chat scope, no rate limit in the way) for each conversation's owner."""
    from chat_app.models import Conversation
    from platform_app.api_tokens import api_token_create

    owners = {c.pk: c.owner for c in Conversation.objects.filter(pk__in=[p[0] for p in people])}
    return [
        api_token_create(
            user=owners[cid], name="bench", scopes=["chat"], rate_limit_per_minute=10_000
        )[1]
        for cid, _ in people
    ]


async def one_request(port: int, conversation_id: int, token: str, gate: Gate) -> Any:
    import httpx2

    headers = {"Authorization": f"Bearer {token}"}
    body = {
        "model": "General",
        "messages": [{"role": "user", "content": "What time is it in Tokyo?"}],
        "conversation_id": conversation_id,
    }
    try:
        async with httpx2.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=TURN_TIMEOUT
        ) as http:
            warm = await http.get("/v1/models")  # the pool's connection, kept alive
            assert warm.status_code == 200, warm.text
            gate.arrived()
            await gate.go.wait()
            started = time.perf_counter()
            reply = await http.post("/v1/chat/completions", json=body)
            elapsed = time.perf_counter() - started
            if reply.status_code != 200:
                return f"HTTP {reply.status_code}", elapsed
            status = reply.json()["controlcenter"]["status"]
            return status, elapsed
    finally:
        if not gate.all_ready.is_set():
            gate.arrived()


async def run(way: str, port: int, people: list[tuple[int, str]], tokens: list[str]) -> list[Any]:
    gate = Gate(len(people))
    if way == "websocket":
        work = [one_turn(port, cid, cookie, gate) for cid, cookie in people]
    else:
        pairs = zip(people, tokens, strict=True)
        work = [one_request(port, cid, token, gate) for (cid, _), token in pairs]
    tasks = [asyncio.create_task(w) for w in work]
    await gate.all_ready.wait()
    await asyncio.sleep(0.5)  # let the server settle after the connection storm
    gate.go.set()
    return await asyncio.gather(*tasks, return_exceptions=True)


def measure(mode: str, sizes: list[int]) -> dict[str, Any]:
    setup_django(mode)
    llm, llm_port = start_llm("--plain")
    port = free_port()
    procs = start_app(mode, port)
    out: dict[str, Any] = {"mode": mode, "llm_delay_s": DELAY, "turn": "one model reply"}

    def batch(way: str, n: int) -> list[Any]:
        people = make_people(n, llm_port)
        tokens = tokens_for(people) if way == "v1" else []
        return asyncio.run(run(way, port, people, tokens))

    try:
        for way in ("websocket", "v1"):  # warm-up: imports, templates, connections
            batch(way, 5)
        for n in sizes:
            results: dict[str, list[Any]] = {"websocket": [], "v1": []}
            repeats = ALONE_REPEATS if n == 1 else ROUNDS_AT_ONCE
            for _ in range(repeats):
                for way in ("websocket", "v1"):
                    results[way].extend(batch(way, n))
            entry = {way: summary(found, None) for way, found in results.items()}
            ws, v1 = entry["websocket"], entry["v1"]
            if "p50_s" in ws and "p50_s" in v1:
                entry["p50_ratio"] = round(v1["p50_s"] / ws["p50_s"], 3)
                entry["p95_ratio"] = round(v1["p95_s"] / ws["p95_s"], 3)
            out[str(n)] = entry
            print(f"{mode} {n}: {entry}", file=sys.stderr, flush=True)
    finally:
        for proc in procs.values():
            stop(proc)
        stop(llm)
    return out


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("embedded", "distributed"):
        sizes = [int(s) for s in sys.argv[2].split(",")] if len(sys.argv) > 2 else SIZES
        emit(measure(sys.argv[1], sizes))
        return
    out: dict[str, Any] = run_each_mode("api_overhead")
    out["target_ratio"] = TARGET
    out["meets_target"] = {
        f"{mode}_{n}": out[mode][n].get("p95_ratio", 99) <= TARGET
        for mode in ("embedded", "distributed")
        for n in ("1", "50")
        if n in out.get(mode, {})
    }
    emit(out)


if __name__ == "__main__":
    main()
