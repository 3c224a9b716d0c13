"""What metrics and tracing cost a turn (issue 25: ≤ +10 % CPU per turn, 50 at once).

The concurrency bench's turn (a scripted model taking ``BENCH_LLM_DELAY`` s per reply, one
``current_time`` round and an answer), 50 conversations at once, with the deployment started
twice per variant, alternated in one run (off, on, off, on), so both see the same machine:

- **off**: no OTLP endpoint (tracing off) and nobody scraping. The counters and histograms are
  still written: they cannot be switched off, and cost microseconds per turn.
- **on**: traces exported over OTLP/HTTP (protobuf, the SDK's batch processor) to a real
  receiver in this process, which decodes every request, and every process's metrics scraped
  once a second (Prometheus scrapes every 15–60 s: this is the heavy end).

CPU per turn is the app processes' user + system time during the crowd (``/proc``), divided by
the turns, measured from the first message until 6 s after the last turn ended (the span
processor's last batch goes out within 5 s); the receiver and the scraper run in the bench
process and are not counted.

    python -m bench observability                     # both modes
    python -m bench.observability embedded            # one mode
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
import urllib.request
from typing import Any

from bench.common import ROOT, emit, run_each_mode, setup_django, stop
from bench.concurrency import RssSampler, crowd, make_people, start_app, start_llm, summary

N = 50
REPEATS = 2  # each variant twice, alternated
TARGET_RATIO = 1.10
SCRAPE_SECONDS = 1.0
SETTLE_SECONDS = 6.0
PORTS = {"agent_runner": 18131, "tools_worker": 18132}


class Scraper:
    """Reads every process's metrics once a second while the crowd runs."""

    def __init__(self, urls: list[str]) -> None:
        self.urls = urls
        self.scrapes = 0
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Scraper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(SCRAPE_SECONDS):
            for url in self.urls:
                try:
                    with urllib.request.urlopen(url, timeout=5) as response:
                        response.read()
                    self.scrapes += 1
                except OSError:
                    self.failures += 1


def variant_env(mode: str, on: bool, endpoint: str) -> dict[str, dict[str, str]]:
    if not on:
        return {}
    tracing = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_SERVICE_NAME": "bench"}
    env = {"web": dict(tracing)}
    if mode == "distributed":
        for name, port in PORTS.items():
            env[name] = {**tracing, "METRICS_PORT": str(port)}
    return env


def run_variant(mode: str, on: bool, port: int, llm_port: int, receiver: Any) -> dict[str, Any]:
    procs = start_app(mode, port, variant_env(mode, on, receiver.endpoint))
    try:
        asyncio.run(crowd(port, make_people(10, llm_port)))  # warm-up
        people = make_people(N, llm_port)
        urls = [f"http://127.0.0.1:{port}/metrics"]
        if mode == "distributed":
            urls += [f"http://127.0.0.1:{p}/metrics" for p in PORTS.values()]
        spans_before = len(receiver.spans)
        with RssSampler(procs) as sampler, Scraper(urls if on else []) as scraper:
            results = asyncio.run(crowd(port, people))
            # The span processor exports in batches, every 5 s by default: its last export
            # must fall inside the measured time. Both variants wait alike.
            time.sleep(SETTLE_SECONDS)
        out = summary(results, None)
        out["cpu_ms_per_turn"] = {k: round(1000 * v / N, 1) for k, v in sampler.cpu_s.items()}
        out["cpu_ms_per_turn_total"] = round(1000 * sum(sampler.cpu_s.values()) / N, 1)
        if on:
            out["scrapes"] = scraper.scrapes
            out["scrape_failures"] = scraper.failures
            out["spans_per_turn"] = round((len(receiver.spans) - spans_before) / N, 1)
        return out
    finally:
        for proc in procs.values():
            stop(proc)


def measure(mode: str) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from tests.otlp_receiver import OTLPReceiver

    setup_django(mode)
    llm, llm_port = start_llm()
    port = 18120 + (1 if mode == "distributed" else 0)
    runs: dict[str, list[dict[str, Any]]] = {"off": [], "on": []}
    try:
        with OTLPReceiver() as receiver:
            for _ in range(REPEATS):
                for name in ("off", "on"):
                    result = run_variant(mode, name == "on", port, llm_port, receiver)
                    print(f"{mode} {name}: {result}", file=sys.stderr, flush=True)
                    runs[name].append(result)
    finally:
        stop(llm)  # type: ignore[arg-type]

    def mean_cpu(name: str) -> float:
        totals = [r["cpu_ms_per_turn_total"] for r in runs[name]]
        return round(sum(totals) / len(totals), 1)

    out: dict[str, Any] = {"mode": mode, "n": N, "runs": runs}
    out["cpu_ms_per_turn"] = {"off": mean_cpu("off"), "on": mean_cpu("on")}
    out["on_vs_off_cpu_ratio"] = round(mean_cpu("on") / mean_cpu("off"), 3)
    out["lost"] = sum(r["lost"] for rs in runs.values() for r in rs)
    out["meets_target"] = out["on_vs_off_cpu_ratio"] <= TARGET_RATIO and out["lost"] == 0
    return out


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("embedded", "distributed"):
        emit(measure(sys.argv[1]))
        return
    out: dict[str, Any] = {"target_ratio": TARGET_RATIO, **run_each_mode("observability")}
    out["load_average"] = [round(x, 2) for x in os.getloadavg()]
    emit(out)


if __name__ == "__main__":
    main()
