"""Many people at once: turn time for 1, 50, 200 and 500 conversations, in both modes.

A turn is what a person waits for: the message goes out over the chat websocket, the model
(the scripted LLM server in its own process, thinking ``DELAY`` seconds per reply) asks for
``current_time``, the tool runs, the model answers, and the ``turn`` event says it is done.
Every conversation belongs to its own user and has its own websocket, opened before the clock
starts; then all messages are sent at once. Reported per mode and concurrency: p50/p95 turn
time, their ratio to one conversation alone (measured in the same run), lost turns (not
``succeeded`` within the timeout), and the peak RSS of every app process (with its children).

The scripted server keeps a stream's connection open for the next request, as real providers
do (over HTTPS a new connection per round would cost a TLS handshake too).

Embedded: ``manage.py serve`` alone (SQLite, in-process runner and worker). Distributed: a web
process, an agent runner and one tools worker (``celery worker -Q tools,browser``) as separate
processes on Redis and Postgres.

    python -m bench concurrency                  # both modes, 1/50/200/500
    python -m bench.concurrency embedded 1,50    # one mode, chosen sizes
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT, child_env, emit, run_each_mode, setup_django, stop, wait

DELAY = float(os.environ.get("BENCH_LLM_DELAY", "2.0"))
SIZES = [1, 50, 200, 500]
ALONE_REPEATS = 5
TURN_TIMEOUT = 180.0
# p95 ÷ alone (issue 38: ≤ 1.5× at 200 and ≤ 3× at 500, embedded, on a 2-core host)
TARGETS = {"50": 1.5, "200": 1.5, "500": 3.0, "rss_mb_500": 1536}
TOOLS_WORKER = ["-P", "threads", "-c", "16"]
PLOT = ROOT / "docs" / "concurrency.png"


# --- processes and their memory ------------------------------------------------------------


class RssSampler:
    """Peak resident memory of each watched process and its children, sampled from /proc,
    and the CPU time they used meanwhile (where the time goes)."""

    def __init__(self, procs: dict[str, subprocess.Popen[bytes]]) -> None:
        self.procs = procs
        self.peak: dict[str, float] = dict.fromkeys(procs, 0.0)
        self.cpu_s: dict[str, float] = {}
        self._cpu0: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> RssSampler:
        self._cpu0 = self._cpu()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        end = self._cpu()
        self.cpu_s = {k: round(end[k] - self._cpu0.get(k, 0.0), 2) for k in end}

    def _cpu(self) -> dict[str, float]:
        ticks = os.sysconf("SC_CLK_TCK")
        parents = _parents()
        out = {}
        for name, proc in self.procs.items():
            total = 0
            for pid in _tree(proc.pid, parents):
                try:
                    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                    total += int(fields[11]) + int(fields[12])
                except (OSError, IndexError, ValueError):
                    continue
            out[name] = total / ticks
        return out

    def _run(self) -> None:
        page = os.sysconf("SC_PAGE_SIZE")
        while not self._stop.wait(0.2):
            parents = _parents()
            for name, proc in self.procs.items():
                total = 0
                for pid in _tree(proc.pid, parents):
                    try:
                        total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * page
                    except (OSError, IndexError, ValueError):
                        continue
                self.peak[name] = max(self.peak[name], total / 1024 / 1024)


def _parents() -> dict[int, int]:
    out = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                out[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    return out


def _tree(root: int, parents: dict[int, int]) -> list[int]:
    found, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, ppid in parents.items() if ppid in frontier]
        found.extend(frontier)
    return found


def start_llm(*extra: str, delay: float = DELAY) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.llm_process", "--delay", str(delay), *extra],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    return proc, int(line.split()[1])


def spawn(mode: str, args: list[str], log: str, **env: str) -> subprocess.Popen[bytes]:
    out = open(ROOT / "var" / f"bench-{mode}" / log, "wb")  # noqa: SIM115
    environment = child_env(mode)
    environment.update(env)
    return subprocess.Popen(args, cwd=ROOT, env=environment, stdout=out, stderr=subprocess.STDOUT)


def start_app(
    mode: str, port: int, env: dict[str, dict[str, str]] | None = None
) -> dict[str, subprocess.Popen[bytes]]:
    """``env``: more variables per process ("web", "agent_runner", "tools_worker")."""
    import urllib.request

    env = env or {}
    procs: dict[str, subprocess.Popen[bytes]] = {}
    if mode == "distributed":
        procs["agent_runner"] = spawn(
            mode,
            [sys.executable, "manage.py", "agent_runner", "--name", "bench"],
            "runner.log",
            **env.get("agent_runner", {}),
        )
        procs["tools_worker"] = spawn(
            mode,
            [sys.executable, "-m", "celery", "-A", "controlcenter", "worker", "-Q"]
            + ["tools,browser", *TOOLS_WORKER, "-l", "WARNING", "--without-mingle"]
            + ["--without-gossip"],
            "worker.log",
            **env.get("tools_worker", {}),
        )
    procs["web"] = spawn(
        mode,
        [sys.executable, "manage.py", "serve", "--port", str(port)],
        "web.log",
        **env.get("web", {}),
    )

    def healthy() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                body = json.loads(r.read())
                return bool(body["status"] == "ok")
        except OSError:
            return False

    wait(healthy, 90, f"the {mode} app to report ok on /healthz")
    return procs


# --- people --------------------------------------------------------------------------------


def make_people(n: int, llm_port: int, llm_url: str = "") -> list[tuple[int, str]]:
    """n users with one conversation each; returns (conversation id, session cookie).
    ``llm_url``: the model's address when it is not on loopback (the fleet's containers)."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.contrib.sessions.backends.db import SessionStore

    from chat_app.models import Conversation, Provider

    Provider.objects.update_or_create(
        name="bench",
        defaults={
            "kind": "openai",
            "base_url": llm_url or f"http://127.0.0.1:{llm_port}/v1",
            "model": "scripted-model",
            "native_tools": "true",
            "is_default": True,
        },
    )
    user_model = get_user_model()
    people = []
    start = user_model.objects.count()
    for i in range(start, start + n):
        user = user_model.objects.create_user(f"person{i}", password=None)
        conversation = Conversation.objects.create(owner=user, title=f"bench {i}")
        session = SessionStore()
        session["_auth_user_id"] = str(user.pk)
        session["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
        session["_auth_user_hash"] = user.get_session_auth_hash()
        session.create()
        people.append((conversation.pk, f"{settings.SESSION_COOKIE_NAME}={session.session_key}"))
    return people


class Gate:
    """Everyone connects first; the clock starts when the last snapshot has arrived."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.ready = 0
        self.all_ready = asyncio.Event()
        self.go = asyncio.Event()

    def arrived(self) -> None:
        self.ready += 1
        if self.ready >= self.n:
            self.all_ready.set()


async def one_turn(port: int, conversation_id: int, cookie: str, gate: Gate) -> Any:
    results = await turns_in_a_row(port, conversation_id, cookie, gate, 1)
    return results[0]


async def turns_in_a_row(
    port: int, conversation_id: int, cookie: str, gate: Gate, turns: int
) -> list[tuple[str, float]]:
    """``turns`` messages one after another on one websocket, each once the last has ended:
    (status, seconds) of each."""
    import websockets

    out: list[tuple[str, float]] = []
    try:
        async with websockets.connect(
            f"ws://127.0.0.1:{port}/ws/conversations/{conversation_id}/",
            additional_headers={"Cookie": cookie, "Origin": f"http://127.0.0.1:{port}"},
            max_size=None,
            open_timeout=120,
            ping_interval=None,
        ) as ws:
            snapshot = json.loads(await ws.recv())
            assert snapshot["type"] == "snapshot", snapshot
            gate.arrived()
            await gate.go.wait()
            for _ in range(turns):
                started = time.perf_counter()
                await ws.send(json.dumps({"action": "send", "text": "What time is it in Tokyo?"}))
                async with asyncio.timeout(TURN_TIMEOUT):
                    while True:
                        event = json.loads(await ws.recv())
                        if event["type"] == "turn" and not event["running"]:
                            out.append((event["status"], time.perf_counter() - started))
                            break
    finally:
        if not gate.all_ready.is_set():
            gate.arrived()  # a failed connection must not hold the others back
    return out


async def crowd(port: int, people: list[tuple[int, str]]) -> list[Any]:
    gate = Gate(len(people))
    tasks = [asyncio.create_task(one_turn(port, c, cookie, gate)) for c, cookie in people]
    await gate.all_ready.wait()
    await asyncio.sleep(0.5)  # let the server settle after the connection storm
    gate.go.set()
    return await asyncio.gather(*tasks, return_exceptions=True)


def summary(results: list[Any], alone: float | None) -> dict[str, Any]:
    times = sorted(r[1] for r in results if isinstance(r, tuple) and r[0] == "succeeded")
    lost = len(results) - len(times)
    out: dict[str, Any] = {"n": len(results), "lost": lost}
    if times:
        p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
        out.update(p50_s=round(statistics.median(times), 3), p95_s=round(p95, 3))
        if alone:
            out.update(
                p50_vs_alone=round(out["p50_s"] / alone, 3),
                p95_vs_alone=round(out["p95_s"] / alone, 3),
            )
    errors = [repr(r)[:200] for r in results if not isinstance(r, tuple)]
    errors += [f"turn {r[0]}" for r in results if isinstance(r, tuple) and r[0] != "succeeded"]
    if errors:
        out["errors"] = sorted(set(errors))[:5]
    return out


def measure(mode: str, sizes: list[int]) -> dict[str, Any]:
    setup_django(mode)
    llm, llm_port = start_llm()
    port = 18100 + (1 if mode == "distributed" else 0)
    procs = start_app(mode, port)
    out: dict[str, Any] = {"mode": mode, "llm_delay_s": DELAY}
    try:
        with RssSampler(procs) as idle:
            time.sleep(1)
        out["idle_rss_mb"] = {k: round(v, 1) for k, v in idle.peak.items()}
        # Warm-up: first requests pay for imports, template compilation and connections.
        asyncio.run(crowd(port, make_people(10, llm_port)))
        alone_runs = []
        for _ in range(ALONE_REPEATS):
            alone_runs.extend(asyncio.run(crowd(port, make_people(1, llm_port))))
        alone_summary = summary(alone_runs, None)
        alone = alone_summary.get("p50_s")
        out["1"] = alone_summary
        for n in sizes:
            if n == 1:
                continue
            people = make_people(n, llm_port)
            with RssSampler(procs) as sampler:
                results = asyncio.run(crowd(port, people))
            out[str(n)] = summary(results, alone)
            out[str(n)]["peak_rss_mb"] = {k: round(v, 1) for k, v in sampler.peak.items()}
            out[str(n)]["peak_rss_mb_total"] = round(sum(sampler.peak.values()), 1)
            out[str(n)]["cpu_ms_per_turn"] = {
                k: round(1000 * v / n, 1) for k, v in sampler.cpu_s.items()
            }
            print(f"{mode} {n}: {out[str(n)]}", file=sys.stderr, flush=True)
    finally:
        for proc in procs.values():
            stop(proc)
        stop(llm)
    return out


def verdict(results: dict[str, Any]) -> dict[str, Any]:
    met: dict[str, Any] = {}
    for mode in ("embedded", "distributed"):
        r = results.get(mode) or {}
        if "50" in r:
            met[f"{mode}_50_p95_within_{TARGETS['50']}x"] = (
                r["50"].get("p95_vs_alone", 99) <= TARGETS["50"] and r["50"]["lost"] == 0
            )
        if "200" in r:
            met[f"{mode}_200_p95_within_{TARGETS['200']}x"] = (
                r["200"].get("p95_vs_alone", 99) <= TARGETS["200"] and r["200"]["lost"] == 0
            )
        if "500" in r:
            met[f"{mode}_500_p95_within_{TARGETS['500']}x"] = (
                r["500"].get("p95_vs_alone", 99) <= TARGETS["500"] and r["500"]["lost"] == 0
            )
            met[f"{mode}_500_rss_within_{TARGETS['rss_mb_500']}mb"] = (
                r["500"]["peak_rss_mb_total"] <= TARGETS["rss_mb_500"]
            )
    return met


def plot(results: dict[str, Any]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install -e '.[bench]')", file=sys.stderr)
        return
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    for mode, color in (("embedded", "#2f5bd3"), ("distributed", "#1e7d46")):
        r = results.get(mode) or {}
        sizes = [int(k) for k in ("1", "50", "200", "500") if k in r and "p50_s" in r[k]]
        if not sizes:
            continue
        ax.plot(sizes, [r[str(n)]["p50_s"] for n in sizes], "o-", color=color, label=f"{mode} p50")
        ax.plot(
            sizes,
            [r[str(n)]["p95_s"] for n in sizes],
            "s--",
            color=color,
            alpha=0.6,
            label=f"{mode} p95",
        )
    ax.set_xscale("log")
    ax.set_xticks([1, 50, 200, 500])
    ax.set_xticklabels(["1", "50", "200", "500"])
    ax.set_xlabel("conversations at once")
    ax.set_ylabel("turn time (s)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"Turn time vs concurrency (model {DELAY:g} s per reply, 2 replies per turn)")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(PLOT)
    print(f"plot: {PLOT}", file=sys.stderr)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("embedded", "distributed"):
        sizes = [int(s) for s in sys.argv[2].split(",")] if len(sys.argv) > 2 else SIZES
        emit(measure(sys.argv[1], sizes))
        return
    out: dict[str, Any] = run_each_mode("concurrency")
    out["targets"] = TARGETS
    out["meets_targets"] = verdict(out)
    plot(out)
    emit(out)


if __name__ == "__main__":
    main()
