"""The embedded server's memory: RSS fresh and after thousands of turns (issue 38, part 4).

Starts ``manage.py serve`` (embedded: SQLite, in-process runner and worker) with the scripted
model (``--mixed``, answering "hello" at once after ``BENCH_LLM_DELAY`` seconds), reads the
RSS of the process tree once ``/healthz`` is ok, then runs ``BENCH_TURNS`` plain turns,
``BENCH_SIZE`` at once: waves of fresh people, each connecting (page and websocket), sending
``TURNS_PER_PERSON`` messages one after the other, and leaving, so conversations, sockets
and channel groups come and go as they do in use. The RSS is read again at the end.

With ``BENCH_TRACEMALLOC=1`` the server runs tracemalloc (``bench/memtrace``) and the result
has the lines whose allocations grew most between the end of the first wave (imports and
first-use caches done) and the end of the run; tracemalloc slows the server and adds its own
memory, so the RSS figures of such a run are not the ones to compare.

    python -m bench memory
    BENCH_TURNS=2000 BENCH_TRACEMALLOC=1 python -m bench.memory
    BENCH_TREE=/tmp/base-worktree python -m bench.memory    # another checkout, same venv
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bench import turn_cost as tc
from bench.common import ROOT, emit, stop

TURNS = int(os.environ.get("BENCH_TURNS", "5000"))
SIZE = int(os.environ.get("BENCH_SIZE", "100"))
DELAY = float(os.environ.get("BENCH_LLM_DELAY", "0.2"))
TURNS_PER_PERSON = 5
TREE = Path(os.environ.get("BENCH_TREE", str(ROOT)))
TRACE = os.environ.get("BENCH_TRACEMALLOC", "") == "1"
TARGETS = {"rss_mb_fresh": 200.0, "rss_mb_after_turns": 250.0}
MEMTRACE = ROOT / "bench" / "memtrace"
PORT = int(os.environ.get("BENCH_PORT", "18160"))  # another port: two runs side by side


class _Side(tc.Side):
    """turn_cost's server side, with tracemalloc on its path instead of the SQL counter."""

    def env(self) -> dict[str, str]:
        env = super().env()
        env.pop("BENCH_SQL_COUNT_FILE", None)
        env.pop("PYTHONPATH", None)
        if TRACE:
            env.update(PYTHONPATH=str(MEMTRACE), BENCH_TRACEMALLOC_DIR=str(self.var / "tm"))
        return env


async def _person(side: _Side, conversation: int, cookie: str) -> int:
    """One person: the page and websocket, ``TURNS_PER_PERSON`` messages, gone. Turns done."""
    ws, _ = await tc._connect(side.port, conversation, cookie)
    done = 0
    try:
        for _ in range(TURNS_PER_PERSON):
            status, _, _ = await tc._turn(ws, "hello")
            done += status == "succeeded"
    finally:
        await ws.close()
    return done


async def _wave(side: _Side) -> tuple[int, int]:
    """``SIZE`` people at once: (turns succeeded, people who failed)."""
    results = await asyncio.gather(
        *(_person(side, c, k) for c, k in side.take(SIZE)), return_exceptions=True
    )
    failed = [r for r in results if not isinstance(r, int)]
    if failed:
        print(f"wave: {len(failed)} failed, e.g. {failed[0]!r:.200}", file=sys.stderr)
    return sum(r for r in results if isinstance(r, int)), len(failed)


def _snapshot(side: _Side, name: str) -> tracemalloc.Snapshot:
    folder = side.var / "tm"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.request").touch()
    path = folder / f"{name}.snapshot"
    deadline = time.monotonic() + 300
    while not path.exists():
        if time.monotonic() > deadline:
            raise RuntimeError("no tracemalloc snapshot from the server")
        time.sleep(0.5)
    snapshot = tracemalloc.Snapshot.load(str(path)).filter_traces(
        [tracemalloc.Filter(False, tracemalloc.__file__)]
    )
    path.unlink()
    return snapshot


def _growth(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot) -> list[str]:
    stats = after.compare_to(before, "lineno")
    top = sorted(stats, key=lambda s: s.size_diff, reverse=True)[:15]
    total = sum(s.size_diff for s in stats) / 1024 / 1024
    lines = [f"total traced growth: {total:+.1f} MiB"]
    for stat in top:
        frame = stat.traceback[0]
        name = frame.filename.split("site-packages/")[-1].removeprefix(str(TREE) + "/")
        lines.append(
            f"{stat.size_diff / 1024:+9.0f} KiB {stat.count_diff:+7d} blocks  {name}:{frame.lineno}"
        )
    return lines


def measure() -> dict[str, Any]:
    from bench.concurrency import start_llm

    waves = max(1, TURNS // (SIZE * TURNS_PER_PERSON))
    llm, llm_port = start_llm("--mixed", delay=DELAY)
    side = _Side("memory", TREE, PORT, llm_port)
    side.var = ROOT / "var" / f"bench-memory-{PORT}"
    try:
        side.prepare(waves * SIZE)
        side.start()
        fresh = round(side.rss_mb(), 1)
        started = time.monotonic()
        turns, failed = asyncio.run(_wave(side))
        after_first = round(side.rss_mb(), 1)
        first = _snapshot(side, "first") if TRACE else None
        for _ in range(waves - 1):
            done, lost = asyncio.run(_wave(side))
            turns, failed = turns + done, failed + lost
        end = round(side.rss_mb(), 1)
        out: dict[str, Any] = {
            "tree": str(TREE),
            "turns": turns,
            "people_failed": failed,
            "size": SIZE,
            "llm_delay_s": DELAY,
            "tracemalloc": TRACE,
            "wall_s": round(time.monotonic() - started, 1),
            "rss_mb_fresh": fresh,
            "rss_mb_after_first_wave": after_first,
            "rss_mb_after_turns": end,
            "targets": TARGETS,
            "meets_targets": {
                "fresh": fresh <= TARGETS["rss_mb_fresh"],
                "after_turns": end <= TARGETS["rss_mb_after_turns"],
            },
        }
        if first is not None:
            out["tracemalloc_growth"] = _growth(first, _snapshot(side, "end"))
        return out
    finally:
        if side.proc is not None:
            stop(side.proc)
        stop(llm)


def main() -> None:
    out = measure()
    for line in out.get("tracemalloc_growth", []):
        print(line, file=sys.stderr)
    print(
        f"RSS fresh {out['rss_mb_fresh']} MiB (target {TARGETS['rss_mb_fresh']:.0f}), after "
        f"{out['turns']} turns {out['rss_mb_after_turns']} MiB "
        f"(target {TARGETS['rss_mb_after_turns']:.0f})",
        file=sys.stderr,
    )
    emit(out)


if __name__ == "__main__":
    main()
