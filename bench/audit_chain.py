"""What the audit hash chain costs: tool calls per second with the chain on and off, 50 at once.

Fifty people, each on their own chat websocket, send ``TURNS`` messages one after another; the
scripted model (its own process, thinking ``DELAY`` seconds) asks for ``current_time`` on each,
so every turn is one governed tool call with its audit record. Calls per second = calls that
succeeded ÷ wall time from the first message to the last turn's end. The app is started with
``AUDIT_CHAIN=true`` (the sealer linking records every ``AUDIT_SEAL_SECONDS`` and signing
checkpoints) or ``false``, the two alternated ``ROUNDS`` times each in one run, so drift hits
both alike. Reported: calls/s per round, each side's calls over its wall time pooled over its
rounds, on ÷ off (goal ≥ 0.95), and, for the "on" runs, that the chain verifies and holds
every record. Embedded (one ``manage.py
serve``) and distributed (web, runner, worker and ``celery beat`` on Redis and PostgreSQL).

    python -m bench audit_chain              # both modes
    python -m bench.audit_chain embedded     # one mode
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from bench.common import emit, free_port, run_each_mode, setup_django, stop
from bench.concurrency import Gate, make_people, spawn, start_app, start_llm, turns_in_a_row

AT_ONCE = 50
TURNS = 8
ROUNDS = 3
DELAY = 0.05
TURN_TIMEOUT = 180.0
SEAL_SECONDS = "1.0"
TARGET = 0.95


async def _crowd(port: int, people: list[tuple[int, str]]) -> tuple[int, float, list[str]]:
    gate = Gate(len(people))
    tasks = [
        asyncio.create_task(turns_in_a_row(port, c, cookie, gate, TURNS)) for c, cookie in people
    ]
    await gate.all_ready.wait()
    await asyncio.sleep(0.5)
    started = time.perf_counter()
    gate.go.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    wall = time.perf_counter() - started
    ok = sum(status == "succeeded" for r in results if isinstance(r, list) for status, _ in r)
    errors = sorted({repr(r)[:160] for r in results if not isinstance(r, list)})
    return ok, wall, errors


def _run(mode: str, chain_on: bool, llm_port: int) -> dict[str, Any]:
    from tools_app.models import AuditRecord
    from tools_app.services import audit_chain

    env = {"AUDIT_CHAIN": "true" if chain_on else "false", "AUDIT_SEAL_SECONDS": SEAL_SECONDS}
    port = free_port()
    procs = start_app(mode, port, {k: env for k in ("web", "agent_runner", "tools_worker")})
    if mode == "distributed":
        procs["beat"] = spawn(
            mode,
            [sys.executable, "-m", "celery", "-A", "controlcenter", "beat", "-l", "WARNING"],
            "beat.log",
            **env,
        )
    try:
        asyncio.run(_crowd(port, make_people(10, llm_port)))  # warm-up
        before = AuditRecord.objects.count()
        ok, wall, errors = asyncio.run(_crowd(port, make_people(AT_ONCE, llm_port)))
        out: dict[str, Any] = {
            "chain": "on" if chain_on else "off",
            "calls": ok,
            "lost": AT_ONCE * TURNS - ok,
            "wall_s": round(wall, 2),
            "calls_per_s": round(ok / wall, 2),
        }
        if errors:
            out["errors"] = errors[:3]
        if chain_on:
            time.sleep(float(SEAL_SECONDS) * 3)  # the sealer's next passes
            unsealed = AuditRecord.objects.filter(seq__isnull=True).count()
            report = audit_chain.verify_database()
            out.update(
                records=AuditRecord.objects.count() - before,
                unsealed_after_wait=unsealed,
                chain_ok=report.ok,
            )
        return out
    finally:
        for proc in procs.values():
            stop(proc)


def measure(mode: str) -> dict[str, Any]:
    setup_django(mode)
    llm, llm_port = start_llm(delay=DELAY)
    runs: list[dict[str, Any]] = []
    try:
        for _ in range(ROUNDS):
            for chain_on in (False, True):
                runs.append(_run(mode, chain_on, llm_port))
                print(f"{mode}: {runs[-1]}", file=sys.stderr, flush=True)
    finally:
        stop(llm)
    on = [r["calls_per_s"] for r in runs if r["chain"] == "on"]
    off = [r["calls_per_s"] for r in runs if r["chain"] == "off"]

    def pooled(chain: str) -> float:  # all calls of a side over all its wall time
        side = [r for r in runs if r["chain"] == chain]
        return sum(r["calls"] for r in side) / sum(r["wall_s"] for r in side)

    ratio = pooled("on") / pooled("off")
    return {
        "mode": mode,
        "at_once": AT_ONCE,
        "turns_each": TURNS,
        "llm_delay_s": DELAY,
        "runs": runs,
        "calls_per_s_on": round(pooled("on"), 2),
        "calls_per_s_off": round(pooled("off"), 2),
        "spread_on": [min(on), max(on)],
        "spread_off": [min(off), max(off)],
        "on_vs_off": round(ratio, 3),
        "target": TARGET,
        "meets_target": ratio >= TARGET and all(r.get("chain_ok", True) for r in runs),
        "lost": sum(r["lost"] for r in runs),
    }


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("embedded", "distributed"):
        emit(measure(sys.argv[1]))
        return
    emit(run_each_mode("audit_chain"))


if __name__ == "__main__":
    main()
