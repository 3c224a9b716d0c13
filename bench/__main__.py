"""``make bench``: run every benchmark in its own process, merge into results/latest.json.

Benchmarks report ratios against a baseline measured in the same run, so figures from a busy
or slow machine stay comparable. Run one with ``python -m bench <name> ...``.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "latest.json"
BENCHES = [
    "roundtrip",
    "binding",
    "sandbox_roundtrip",
    "browser_pool",
    "memory_search",
    "conversation_search",
    "mcp_overhead",
    "concurrency",
    "api_overhead",
    "upload",
    "usage_record",
    "observability",
    "audit_chain",
    "turn_cost",
    "memory",
]


def run_one(name: str) -> dict[str, object]:
    print(f"--> bench {name}", file=sys.stderr, flush=True)
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", f"bench.{name}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        return {"error": f"exit code {proc.returncode}", "stderr": proc.stderr[-2000:]}
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["wall_seconds"] = round(time.monotonic() - started, 1)
    return result


def cpu_speed_ms() -> float:
    """The machine's speed at pure-Python work, to compare runs from different days: the
    fastest of five runs of a fixed loop (2 M iterations of arithmetic and dict access). The
    benches' own figures are ratios within a run; this says how fast the machine was."""
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        box = {"n": 0}
        for i in range(2_000_000):
            box["n"] += i & 7
        best = min(best, time.perf_counter() - started)
    return round(best * 1000, 1)


def main(argv: list[str]) -> int:
    names = argv or [n for n in BENCHES if (ROOT / "bench" / f"{n}.py").exists()]
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    speed_before = cpu_speed_ms()
    for name in names:
        results[name] = run_one(name)
        print(json.dumps({name: results[name]}, indent=2))
    results["_machine"] = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": __import__("os").cpu_count(),
        # before and after the benches; lower is faster
        "python_loop_2m_ms": {"before": speed_before, "after": cpu_speed_ms()},
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    failed = [n for n in names if "error" in results[n]]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
