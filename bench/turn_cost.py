"""What a turn costs, this code against a base commit, alternated in one run (issue 38).

Both trees run ``manage.py serve`` (embedded: SQLite, in-process runner and worker) side by
side, each on its own port and state directory, with one scripted model (``--mixed``: a
message asking the time gets a ``current_time`` call, any other message the answer at once).
The base commit is checked out in a worktree of this repository (``git worktree add``) and
runs on this checkout's virtualenv. Each round measures, on each side in turn (the order
flips every round), with ``SIZE`` fresh people at once, each with their own conversation:

- **setup**: the conversation page (GET) and the websocket up to its snapshot;
- **plain**: "hello", answered in one model reply;
- **tool**: "What time is it in Tokyo?": a ``current_time`` round, then the answer.

For each: the server's CPU (the ``serve`` process and its children, from /proc, net of the
idle CPU measured on that side just before), SQL statements (counted in the server by a
``sitecustomize`` this bench puts on its path, the same for both trees), bytes received over
the websocket, and for the turns p95 ÷ the same side's turn alone. The model's log gives the
prompt tokens per round before the person's words. The result has each side's per-round
figures, their medians and this ÷ base.

    python -m bench turn_cost                        # 56fa341, 5 rounds of 50
    BENCH_BASE=<commit> BENCH_ROUNDS=3 BENCH_SIZE=50 python -m bench.turn_cost
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.common import ROOT, emit, stop, wait
from bench.concurrency import _parents
from bench.concurrency import _tree as _process_tree

BASE = os.environ.get("BENCH_BASE", "56fa341")
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
SIZE = int(os.environ.get("BENCH_SIZE", "50"))
DELAY = float(os.environ.get("BENCH_LLM_DELAY", "2.0"))
IDLE_SECONDS = 3.0
TURN_TIMEOUT = 180.0
TARGETS = {"plain_cpu_ratio": 0.85, "tool_cpu_ratio": 0.75}
SQLCOUNT = ROOT / "bench" / "sqlcount"

PEOPLE = """
import json, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlcenter.settings")
import django
django.setup()
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from django.core.management import call_command
from chat_app.models import Conversation, Provider
call_command("migrate", verbosity=0, interactive=False)
n, port = int(sys.argv[1]), int(sys.argv[2])
Provider.objects.update_or_create(name="bench", defaults={
    "kind": "openai", "base_url": f"http://127.0.0.1:{port}/v1", "model": "scripted-model",
    "native_tools": "true", "is_default": True})
users = get_user_model()
start = users.objects.count()
out = []
for i in range(start, start + n):
    user = users.objects.create_user(f"person{i}", password=None)
    conversation = Conversation.objects.create(owner=user, title=f"bench {i}")
    session = SessionStore()
    session["_auth_user_id"] = str(user.pk)
    session["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
    session["_auth_user_hash"] = user.get_session_auth_hash()
    session.create()
    out.append([conversation.pk, f"{settings.SESSION_COOKIE_NAME}={session.session_key}"])
print(json.dumps(out))
"""


class Side:
    """One tree's server: its process, port, state and people not yet used."""

    def __init__(self, name: str, tree: Path, port: int, llm_port: int) -> None:
        self.name, self.tree, self.port, self.llm_port = name, tree, port, llm_port
        self.var = ROOT / "var" / f"bench-turn-cost-{name}"
        self.sql_file = self.var / "sql-count"
        self.people: list[tuple[int, str]] = []
        self.proc: subprocess.Popen[bytes] | None = None
        self.rounds: list[dict[str, Any]] = []

    def env(self) -> dict[str, str]:
        env = os.environ.copy()
        for key in ("REDIS_URL", "DATABASE_URL", "DJANGO_SETTINGS_MODULE"):
            env.pop(key, None)
        env.update(
            CC_VAR_DIR=str(self.var),
            PYTHONUNBUFFERED="1",
            PYTHONPATH=str(SQLCOUNT),
            BENCH_SQL_COUNT_FILE=str(self.sql_file),
        )
        return env

    def prepare(self, people: int) -> None:
        if self.var.exists():
            for path in self.var.glob("db.sqlite3*"):
                path.unlink()
        self.var.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [sys.executable, "-c", PEOPLE, str(people), str(self.llm_port)],
            cwd=self.tree,
            env=self.env(),
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"{self.name}: people: {proc.stderr[-2000:]}")
        self.people = [tuple(p) for p in json.loads(proc.stdout.strip().splitlines()[-1])]

    def start(self) -> None:
        log = open(self.var / "web.log", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(self.port)],
            cwd=self.tree,
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )

        def healthy() -> bool:
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{self.port}/healthz", timeout=2
                ) as r:
                    return bool(json.loads(r.read())["status"] == "ok")
            except (OSError, ValueError, KeyError):
                return False

        wait(healthy, 120, f"the {self.name} server")

    def take(self, n: int) -> list[tuple[int, str]]:
        taken, self.people = self.people[:n], self.people[n:]
        if len(taken) < n:
            raise RuntimeError(f"{self.name}: out of people")
        return taken

    def cpu_s(self) -> float:
        assert self.proc is not None
        return _tree_cpu(self.proc.pid)

    def rss_mb(self) -> float:
        assert self.proc is not None
        page = os.sysconf("SC_PAGE_SIZE")
        total = 0
        for pid in _tree(self.proc.pid):
            try:
                total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * page
            except (OSError, IndexError, ValueError):
                continue
        return total / 1024 / 1024

    def sql(self) -> int:
        time.sleep(0.3)  # the counter writes its file every 0.1 s
        try:
            return int(self.sql_file.read_text() or 0)
        except (OSError, ValueError):
            return 0


def _tree(root: int) -> list[int]:
    """``root`` and its descendants now (``bench.concurrency``'s walk of /proc)."""
    return _process_tree(root, _parents())


def _tree_cpu(root: int) -> float:
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in _tree(root):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            continue
    return total / ticks


# --- the clients ----------------------------------------------------------------------------


async def _connect(port: int, conversation_id: int, cookie: str) -> tuple[Any, int]:
    """The page, then the websocket up to its snapshot: (socket, bytes received)."""
    import websockets

    def page() -> int:
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/c/{conversation_id}/", headers={"Cookie": cookie}
        )
        with urllib.request.urlopen(request, timeout=120) as r:
            return len(r.read())

    size = await asyncio.to_thread(page)
    ws = await websockets.connect(
        f"ws://127.0.0.1:{port}/ws/conversations/{conversation_id}/",
        additional_headers={"Cookie": cookie, "Origin": f"http://127.0.0.1:{port}"},
        max_size=None,
        open_timeout=120,
        ping_interval=None,
    )
    snapshot = await ws.recv()
    assert json.loads(snapshot)["type"] == "snapshot"
    return ws, size + len(snapshot)


async def _turn(ws: Any, text: str) -> tuple[str, float, int]:
    """(status, seconds, bytes received) of one message until its turn has ended."""
    received = 0
    started = time.perf_counter()
    await ws.send(json.dumps({"action": "send", "text": text}))
    async with asyncio.timeout(TURN_TIMEOUT):
        while True:
            frame = await ws.recv()
            received += len(frame)
            event = json.loads(frame)
            if event["type"] == "turn" and not event["running"]:
                return event["status"], time.perf_counter() - started, received


async def _crowd(side: Side, n: int, text: str) -> dict[str, Any]:
    """``n`` people connect (setup measured), then all send ``text`` at once."""
    people = side.take(n)
    cpu0, sql0 = side.cpu_s(), side.sql()
    started = time.monotonic()
    connected = await asyncio.gather(*(_connect(side.port, c, k) for c, k in people))
    setup_wall = time.monotonic() - started
    cpu1, sql1 = side.cpu_s(), side.sql()
    await asyncio.sleep(0.5)
    cpu2, sql2 = side.cpu_s(), side.sql()
    t0 = time.monotonic()
    results = await asyncio.gather(
        *(_turn(ws, text) for ws, _ in connected), return_exceptions=True
    )
    wall = time.monotonic() - t0
    cpu3, sql3 = side.cpu_s(), side.sql()
    for ws, _ in connected:
        await ws.close()
    done = [r for r in results if isinstance(r, tuple) and r[0] == "succeeded"]
    return {
        "setup_cpu_s": cpu1 - cpu0,
        "setup_wall_s": setup_wall,
        "setup_sql": sql1 - sql0,
        "setup_bytes": statistics.mean(size for _, size in connected),
        "turn_cpu_s": cpu3 - cpu2,
        "turn_wall_s": wall,
        "turn_sql": sql3 - sql2,
        "lost": n - len(done),
        "times": sorted(r[1] for r in done),
        "bytes": statistics.mean(r[2] for r in done) if done else 0,
        "errors": sorted({repr(r)[:160] for r in results if r not in done})[:3],
    }


def _idle_rate(side: Side) -> float:
    before = side.cpu_s()
    time.sleep(IDLE_SECONDS)
    return (side.cpu_s() - before) / IDLE_SECONDS


def _alone(side: Side, text: str) -> float:
    """The median of three turns alone."""
    times = []
    for _ in range(3):
        r = asyncio.run(_crowd(side, 1, text))
        times.extend(r["times"])
    return statistics.median(times) if times else float("nan")


def _measure_round(side: Side, alone: dict[str, float]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind, text in (("plain", "hello"), ("tool", "What time is it in Tokyo?")):
        idle = _idle_rate(side)
        r = asyncio.run(_crowd(side, SIZE, text))
        times = r["times"]
        p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))] if times else 0.0
        net_turn = r["turn_cpu_s"] - idle * r["turn_wall_s"]
        net_setup = r["setup_cpu_s"] - idle * r["setup_wall_s"]
        out[kind] = {
            "cpu_ms_per_turn": round(1000 * net_turn / SIZE, 2),
            "setup_cpu_ms": round(1000 * net_setup / SIZE, 2),
            "sql_per_turn": round(r["turn_sql"] / SIZE, 1),
            "setup_sql": round(r["setup_sql"] / SIZE, 1),
            "ws_bytes_per_turn": round(r["bytes"]),
            "p95_vs_alone": round(p95 / alone[kind], 3) if times else None,
            "lost": r["lost"],
        }
        if r["errors"]:
            out[kind]["errors"] = r["errors"]
    return out


# --- the trees --------------------------------------------------------------------------------


def base_tree(commit: str) -> Path:
    """The base commit checked out once in a worktree of this repository (kept for reuse)."""
    rev = subprocess.run(
        ["git", "rev-parse", "--verify", f"{commit}^{{commit}}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    tree = Path(tempfile.gettempdir()) / f"cc-bench-base-{rev[:12]}"
    if not (tree / "manage.py").exists():
        subprocess.run(["git", "worktree", "prune"], cwd=ROOT, check=False)
        subprocess.run(
            ["git", "worktree", "add", "--detach", "--force", str(tree), rev],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
    return tree


def _tokens(log: Path) -> dict[str, float]:
    plain = [
        json.loads(line)
        for line in log.read_text().splitlines()
        if line.strip() and json.loads(line)["first_round"]
    ]
    if not plain:
        return {}
    return {
        "tokens_before_words": statistics.median(p["before_words_tokens"] for p in plain),
        "tools_sent": statistics.median(p["tools"] for p in plain),
    }


def _median(rounds: list[dict[str, Any]], kind: str, key: str) -> float | None:
    values = [r[kind][key] for r in rounds if r[kind].get(key) is not None]
    return round(statistics.median(values), 3) if values else None


def measure() -> dict[str, Any]:
    from bench.concurrency import start_llm

    sides: list[Side] = []
    logs: dict[str, Path] = {}
    llms = []
    (ROOT / "var").mkdir(exist_ok=True)
    try:
        for i, (name, tree) in enumerate((("base", base_tree(BASE)), ("main", ROOT))):
            logs[name] = ROOT / "var" / f"bench-turn-cost-{name}.llm.jsonl"
            logs[name].unlink(missing_ok=True)
            llm, llm_port = start_llm("--mixed", "--log", str(logs[name]), delay=DELAY)
            llms.append(llm)
            side = Side(name, tree, 18120 + i, llm_port)
            side.prepare(ROUNDS * 2 * SIZE + 20)
            side.start()
            sides.append(side)
        alone: dict[str, dict[str, float]] = {}
        fresh: dict[str, float] = {}
        for side in sides:
            fresh[side.name] = round(side.rss_mb(), 1)
            asyncio.run(_crowd(side, 8, "What time is it in Tokyo?"))  # warm-up
            alone[side.name] = {"plain": _alone(side, "hello"), "tool": 0.0}
            alone[side.name]["tool"] = _alone(side, "What time is it in Tokyo?")
        for logname in logs.values():
            logname.write_text("")  # tokens: the measured rounds only
        for r in range(ROUNDS):
            order = sides if r % 2 == 0 else sides[::-1]
            for side in order:
                figures = _measure_round(side, alone[side.name])
                side.rounds.append(figures)
                print(f"round {r + 1} {side.name}: {json.dumps(figures)}", file=sys.stderr)
        out: dict[str, Any] = {
            "base_commit": BASE,
            "size": SIZE,
            "rounds": ROUNDS,
            "llm_delay_s": DELAY,
            "targets": TARGETS,
        }
        for side in sides:
            summary: dict[str, Any] = {"rss_mb_fresh": fresh[side.name]}
            summary["rss_mb_end"] = round(side.rss_mb(), 1)
            summary["alone_s"] = {k: round(v, 3) for k, v in alone[side.name].items()}
            for kind in ("plain", "tool"):
                summary[kind] = {
                    key: _median(side.rounds, kind, key)
                    for key in side.rounds[0][kind]
                    if key != "errors"
                }
                summary[kind]["cpu_ms_runs"] = [x[kind]["cpu_ms_per_turn"] for x in side.rounds]
            summary["prompt"] = _tokens(logs[side.name])
            out[side.name] = summary
        ratio = {}
        for kind in ("plain", "tool"):
            for key in ("cpu_ms_per_turn", "setup_cpu_ms", "sql_per_turn", "ws_bytes_per_turn"):
                b, m = out["base"][kind][key], out["main"][kind][key]
                if b:
                    ratio[f"{kind}_{key}"] = round(m / b, 3)
        out["main_vs_base"] = ratio
        out["meets_targets"] = {
            "plain_cpu": ratio.get("plain_cpu_ms_per_turn", 9) <= TARGETS["plain_cpu_ratio"],
            "tool_cpu": ratio.get("tool_cpu_ms_per_turn", 9) <= TARGETS["tool_cpu_ratio"],
        }
        return out
    finally:
        for side in sides:
            if side.proc is not None:
                stop(side.proc)
        for llm in llms:
            stop(llm)


def table(out: dict[str, Any]) -> str:
    rows = [
        f"| per turn, {SIZE} at once | {out['base_commit']} (base) | main | main ÷ base |",
        "|---|---|---|---|",
    ]
    b, m = out["base"], out["main"]
    for kind in ("plain", "tool"):
        for key, label in (
            ("cpu_ms_per_turn", "server CPU, ms"),
            ("setup_cpu_ms", "page + websocket setup CPU, ms"),
            ("sql_per_turn", "SQL statements"),
            ("ws_bytes_per_turn", "websocket bytes"),
            ("p95_vs_alone", "p95 ÷ alone"),
            ("lost", "lost"),
        ):
            bv, mv = b[kind][key], m[kind][key]
            ratio = f"{mv / bv:.2f}" if bv else ""
            rows.append(f"| {kind}: {label} | {bv} | {mv} | {ratio} |")
    rows.append(
        f"| RSS fresh / end, MiB | {b['rss_mb_fresh']} / {b['rss_mb_end']} | "
        f"{m['rss_mb_fresh']} / {m['rss_mb_end']} | |"
    )
    bt, mt = b["prompt"].get("tokens_before_words"), m["prompt"].get("tokens_before_words")
    rows.append(f"| prompt tokens before the words, plain | {bt} | {mt} | |")
    return "\n".join(rows)


def main() -> None:
    out = measure()
    print(table(out), file=sys.stderr)
    emit(out)


if __name__ == "__main__":
    main()
