"""Prometheus metrics: the counters and histograms every process writes, and how they are read.

Every process kind serves its own: the web process on ``/metrics`` (with the deployment's
state — approvals pending, queue depth — read when scraped), the agent runner, the tools
worker and beat on ``METRICS_PORT`` (``metrics_serve``). Values live in prometheus-client's
multiprocess files (``infra.metrics_dir``), so a prefork worker's children are counted by the
parent that serves them. Writing a value costs a few microseconds; nothing here touches the
database or the network on the hot path. ``docs/OBSERVABILITY.md`` lists every metric.

Who may read them (``metrics_allowed``, the same rule for ``/metrics`` and the ports): the
addresses in ``METRICS_ALLOWED_IPS`` (loopback by default), or anyone with
``Authorization: Bearer <METRICS_TOKEN>``. A request that came through a proxy (it carries
``X-Forwarded-For``, ``Forwarded`` or ``X-Real-IP``) does not count as coming from the proxy's
address: behind a proxy on the same host, only the token opens them.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from infra import access

logger = logging.getLogger(__name__)

_ROUND_BUCKETS = (0.25, 0.5, 1, 2, 3, 5, 8, 13, 20, 30, 60, 120, 300)
_FIRST_TOKEN_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 20, 60)
_TOOL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)

TURNS = Counter(
    "cc_turns", "Turns that ended, by status and what started them", ["status", "source"]
)
MODEL_ROUND_SECONDS = Histogram(
    "cc_model_round_seconds",
    "A model round's whole reply, first byte asked to last received",
    ["provider_kind", "model", "outcome"],
    buckets=_ROUND_BUCKETS,
)
MODEL_FIRST_TOKEN_SECONDS = Histogram(
    "cc_model_first_token_seconds",
    "Time to the first token of a model reply",
    ["provider_kind", "model"],
    buckets=_FIRST_TOKEN_BUCKETS,
)
MODEL_TOKENS = Counter(
    "cc_model_tokens",
    "Tokens of model rounds: input (the whole prompt), cached (of the input), output",
    ["model", "kind"],
)
MODEL_COST = Counter(
    "cc_model_cost_dollars", "What model rounds cost at the admins' prices", ["model"]
)
TOOL_CALLS = Counter(
    "cc_tool_calls",
    "Tool calls that ended, by tool, status and way in",
    ["tool", "status", "source"],
)
TOOL_CALL_SECONDS = Histogram(
    "cc_tool_call_seconds", "How long tool calls ran", ["tool", "status"], buckets=_TOOL_BUCKETS
)
POLICY_SHADOW = Counter(
    "cc_policy_shadow_verdicts",
    "Tool calls decided by the live policy and by the shadow policy beside it (never "
    "enforced), by both verdicts: allowed, approval, denied or failed",
    ["live", "shadow"],
)
QUOTA_REFUSALS = Counter(
    "cc_quota_refusals", "Model rounds and tool calls refused by a quota", ["what", "metric"]
)
BEAT_TICKS = Counter("cc_beat_ticks", "Schedules ticks beat sent")
# Live values of a process (its files are removed when it stops: "livesum" adds up the live).
RUNNER_IN_FLIGHT = Gauge(
    "cc_runner_rounds_in_flight",
    "Model rounds this agent runner streams now",
    [],
    multiprocess_mode="livesum",
)
RUNNER_CAPACITY = Gauge(
    "cc_runner_capacity",
    "Model rounds this agent runner may stream at once",
    [],
    multiprocess_mode="livesum",
)
SANDBOX_POOL = Gauge(
    "cc_sandbox_pool_size",
    "Warm sandbox containers this process holds",
    ["backend"],
    multiprocess_mode="livesum",
)


def model_round(
    *,
    kind: str,
    model: str,
    outcome: str,
    seconds: float,
    first_token_seconds: float | None,
    input_tokens: int,
    output_tokens: int,
    cached_tokens: int,
    cost: float,
) -> None:
    MODEL_ROUND_SECONDS.labels(kind, model, outcome).observe(seconds)
    if first_token_seconds is not None:
        MODEL_FIRST_TOKEN_SECONDS.labels(kind, model).observe(first_token_seconds)
    MODEL_TOKENS.labels(model, "input").inc(input_tokens)
    MODEL_TOKENS.labels(model, "output").inc(output_tokens)
    if cached_tokens:
        MODEL_TOKENS.labels(model, "cached").inc(cached_tokens)
    if cost:
        MODEL_COST.labels(model).inc(cost)


def tool_call_ended(*, tool: str, status: str, source: str, seconds: float | None) -> None:
    TOOL_CALLS.labels(tool, status, source).inc()
    if seconds is not None:
        TOOL_CALL_SECONDS.labels(tool, status).observe(seconds)


def policy_shadow(*, live: str, shadow: str) -> None:
    POLICY_SHADOW.labels(live, shadow).inc()


# --- values read when scraped --------------------------------------------------------------
# name → function returning metric families; "process" ones are served by every exporter of
# this process, "deployment" ones by the web process's /metrics only (they read shared state:
# one process reporting them is enough).
Reader = Callable[[], Iterable[Metric]]
_readers: dict[str, dict[str, Reader]] = {"process": {}, "deployment": {}}
_kind = {"name": "process"}


def metrics_reader(name: str, read: Reader, *, scope: str = "process") -> None:
    """Register values computed when scraped (a gauge of current state). Replaces ``name``."""
    _readers[scope][name] = read


def gauge(name: str, documentation: str, value: float, **labels: str) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation, labels=list(labels))
    family.add_metric(list(labels.values()), value)
    return family


class _Readers(Collector):
    def __init__(self, scopes: tuple[str, ...]) -> None:
        self.scopes = scopes

    def collect(self) -> Iterable[Metric]:
        yield gauge("cc_process", "This process and its kind", 1, kind=_kind["name"])
        for scope in self.scopes:
            for name, read in list(_readers[scope].items()):
                try:
                    yield from read()
                except Exception:  # a broken reader must not take the others with it
                    logger.warning("metrics: reading %s failed", name, exc_info=True)


def process_gone() -> None:
    """This process (a prefork child) is leaving: its live values go with it."""
    from prometheus_client import multiprocess

    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.mark_process_dead(os.getpid())


def process_kind_set(kind: str) -> None:
    """web, runner, worker or beat: shown as ``cc_process{kind=…}``."""
    _kind["name"] = kind


def exposition(*, deployment: bool) -> bytes:
    registry = CollectorRegistry()
    path = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if path:
        MultiProcessCollector(registry, path=path)
    registry.register(_Readers(("process", "deployment") if deployment else ("process",)))
    return generate_latest(registry)


# --- who may read them ----------------------------------------------------------------------
_PROXY_HEADERS = ("x-forwarded-for", "forwarded", "x-real-ip")


def metrics_allowed(
    *, remote_addr: str, headers: Mapping[str, str], networks: list[str], token: str
) -> bool:
    """The bearer token from anywhere; otherwise an address in ``networks``, unless the
    request came through a proxy (then its real address is unknown)."""
    authorization = headers.get("authorization", "")
    if token and authorization.startswith("Bearer "):
        return hmac.compare_digest(authorization[7:].encode(), token.encode())
    if any(headers.get(name) for name in _PROXY_HEADERS):
        return False
    try:
        address = ipaddress.ip_address(remote_addr.strip("[]"))
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(address in ipaddress.ip_network(net, strict=False) for net in networks)


# --- the port of a worker, a runner or beat -------------------------------------------------
_server: dict[str, Any] = {}
_server_lock = threading.Lock()


def metrics_serve(*, kind: str, port: int, host: str, networks: list[str], token: str) -> int:
    """Serve this process's metrics on ``host:port`` (0: a free port) in a thread; returns the
    port. Once per process."""
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    from prometheus_client.exposition import ThreadingWSGIServer

    process_kind_set(kind)
    with _server_lock:
        if "port" in _server:
            return int(_server["port"])

        def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
            headers = {
                key[5:].replace("_", "-").lower(): value
                for key, value in environ.items()
                if key.startswith("HTTP_")
            }
            allowed = metrics_allowed(
                remote_addr=environ.get("REMOTE_ADDR", ""),
                headers=headers,
                networks=networks,
                token=token,
            )
            if not allowed:
                start_response("403 Forbidden", [("Content-Type", "text/plain")])
                return [b"metrics: not from an allowed address, and no valid token\n"]
            body = exposition(deployment=False)
            start_response("200 OK", [("Content-Type", CONTENT_TYPE_LATEST)])
            return [body]

        class _Quiet(WSGIRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = make_server(host, port, app, ThreadingWSGIServer, handler_class=_Quiet)
        thread = threading.Thread(target=server.serve_forever, name="metrics", daemon=True)
        thread.start()
        _server.update(port=server.server_port, server=server)
        logger.info("metrics of this %s on http://%s:%s/metrics", kind, host, server.server_port)
        return int(server.server_port)


# --- /metrics of the web process ----------------------------------------------------------
@access.public("its own check: loopback, an allow-list or a bearer token (metrics_allowed)")
def metrics_view(request: Any) -> Any:
    """``/metrics``: this process's values and the deployment's state (``metrics_reader``)."""
    from django.conf import settings
    from django.http import HttpResponse

    allowed = metrics_allowed(
        remote_addr=request.META.get("REMOTE_ADDR", ""),
        headers={k.lower(): v for k, v in request.headers.items()},
        networks=settings.METRICS_ALLOWED_IPS,
        token=settings.METRICS_TOKEN,
    )
    if not allowed:
        return HttpResponse(
            "metrics: not from an allowed address, and no valid token\n",
            status=403,
            content_type="text/plain",
        )
    return HttpResponse(exposition(deployment=True), content_type=CONTENT_TYPE_LATEST)
