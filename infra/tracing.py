"""OpenTelemetry traces: one turn is one trace, whichever processes run it.

Off unless an exporter is configured with the standard variables (``OTEL_TRACES_EXPORTER``,
``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``; read in
``controlcenter/settings.py``); the official SDK reads the rest of ``OTEL_*`` itself (headers,
timeouts, batching, resource attributes). Off, every helper here returns at once.

The shape of a trace:

- **turn** — the root. Its ids are made when the turn starts (``turn_context_new``) and kept on
  the turn row (``Turn.trace_context``), so every process that works on the turn joins it;
  the process that ends the turn emits the span itself, with the turn's start time and the
  ids chosen at the start (``turn_span_end``, through an id generator that hands them out).
- **turn start** (web), **model round** (agent runner), **tool <name>** (the tools worker, or
  where binding refused it) and **sandbox exec** are spans below it. The context travels in
  the turn row, in each tool call's Celery message (``traceparent`` header), and into the
  sandboxed command as the ``TRACEPARENT`` variable.

Database work of the runner runs on a thread pool that does not carry context variables, so a
round activates its span explicitly there (``activated``).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import socket
import time
from collections.abc import Iterator, Mapping
from typing import Any

logger = logging.getLogger(__name__)

_state: dict[str, Any] = {"tracer": None, "provider": None, "kind": ""}
# Ids the next span must take (the turn span, emitted by whoever ends the turn).
_forced: contextvars.ContextVar[tuple[int, int] | None] = contextvars.ContextVar(
    "cc_forced_ids", default=None
)


def enabled() -> bool:
    return _state["tracer"] is not None


def tracing_start(kind: str, *, exporter: Any = None) -> bool:
    """Set up tracing for this process (web, runner, worker, beat) if configured; True when
    on. ``exporter``: an exporter to use instead of the configured one (tests)."""
    from django.conf import settings

    if _state["tracer"] is not None:
        return True
    if exporter is None and not settings.OTEL_TRACES_ON:
        return False
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

    class _Ids(RandomIdGenerator):
        def generate_span_id(self) -> int:
            forced = _forced.get()
            return forced[1] if forced else super().generate_span_id()

        def generate_trace_id(self) -> int:
            forced = _forced.get()
            return forced[0] if forced else super().generate_trace_id()

    if exporter is None:
        if settings.OTEL_TRACES_EXPORTER == "console":
            exporter = ConsoleSpanExporter()
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter()  # endpoint, headers, timeout: from OTEL_* itself
    # Resource.create reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES too.
    resource = Resource.create(
        {
            "service.name": os.environ.get("OTEL_SERVICE_NAME") or "controlcenter",
            "service.instance.id": f"{socket.gethostname()}:{os.getpid()}",
            "cc.process.kind": kind,
        }
    )
    provider = TracerProvider(resource=resource, id_generator=_Ids())
    provider.add_span_processor(BatchSpanProcessor(exporter))
    _state.update(provider=provider, tracer=provider.get_tracer("controlcenter"), kind=kind)
    logger.info("tracing on (%s) for this %s", type(exporter).__name__, kind)
    return True


def tracing_flush(timeout_ms: int = 5000) -> None:
    provider = _state["provider"]
    if provider is not None:
        provider.force_flush(timeout_ms)


def tracing_stop() -> None:
    """Flush and forget (tests)."""
    provider = _state["provider"]
    if provider is not None:
        provider.shutdown()
    _state.update(provider=None, tracer=None, kind="")


# --- contexts as text -----------------------------------------------------------------------
def _parse(traceparent: str) -> Any:
    """The SpanContext of a ``traceparent`` (W3C), or None."""
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    parts = traceparent.split("|", 1)[0].split("-")
    if len(parts) != 4:
        return None
    try:
        trace_id, span_id = int(parts[1], 16), int(parts[2], 16)
    except ValueError:
        return None
    if not trace_id or not span_id:
        return None
    context = SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(1))
    return NonRecordingSpan(context)


def _format(trace_id: int, span_id: int) -> str:
    return f"00-{trace_id:032x}-{span_id:016x}-01"


def _context_of(traceparent: str) -> Any:
    """An OTel Context whose current span is ``traceparent``'s (empty: a new root)."""
    from opentelemetry import trace
    from opentelemetry.context import Context

    span = _parse(traceparent) if traceparent else None
    return trace.set_span_in_context(span) if span is not None else Context()


def current_traceparent() -> str:
    """The current span's context as a ``traceparent`` ('' when none or tracing is off)."""
    if not enabled():
        return ""
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return ""
    return _format(context.trace_id, context.span_id)


# --- the turn ---------------------------------------------------------------------------------
def turn_context_new() -> str:
    """Ids for a new turn's span, as it will be stored on the turn:
    ``<traceparent of the turn span>|<parent span id>|<start, ns since the epoch>``, the
    parent empty unless the turn continues a trace already current (an API request's).
    '' when tracing is off."""
    if not enabled():
        return ""
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

    ids = RandomIdGenerator()
    outer = current_traceparent()
    started = time.time_ns()  # the turn span starts here, before anything it contains
    if outer:
        trace_id, parent = outer.split("-")[1], outer.split("-")[2]
        return f"{_format(int(trace_id, 16), ids.generate_span_id())}|{parent}|{started}"
    return f"{_format(ids.generate_trace_id(), ids.generate_span_id())}||{started}"


def turn_span_end(
    trace_context: str, *, started_at: float, attributes: Mapping[str, Any], error: str = ""
) -> None:
    """Emit the turn's span (``started_at``: seconds since the epoch) with the ids its start
    chose; once, by the process that ended the turn."""
    tracer = _state["tracer"]
    if tracer is None or not trace_context:
        return
    own = _parse(trace_context)
    if own is None:
        return
    _, parent, started = (trace_context.split("|") + ["", ""])[:3]
    start_ns = int(started) if started.isdigit() else int(started_at * 1e9)
    own_context = own.get_span_context()
    parent_context = (
        _context_of(_format(own_context.trace_id, int(parent, 16))) if parent else _context_of("")
    )
    token = _forced.set((own_context.trace_id, own_context.span_id))
    try:
        span = tracer.start_span(
            "turn",
            context=parent_context,
            start_time=min(start_ns, int(started_at * 1e9)),
            attributes=dict(attributes),
        )
    finally:
        _forced.reset(token)
    if error:
        from opentelemetry.trace import Status, StatusCode

        span.set_status(Status(StatusCode.ERROR, error[:500]))
    span.end()


# --- spans below it ---------------------------------------------------------------------------
@contextlib.contextmanager
def span(
    name: str,
    *,
    parent: str | None = None,
    attributes: Mapping[str, Any] | None = None,
    start_time: float | None = None,
) -> Iterator[Any]:
    """A span, current while the block runs; yields it (None when tracing is off).
    ``parent``: a ``traceparent`` ('' or None: the current span, if any)."""
    tracer = _state["tracer"]
    if tracer is None:
        yield None
        return
    from opentelemetry import trace

    context = _context_of(parent) if parent else None
    started = int(start_time * 1e9) if start_time is not None else None
    one = tracer.start_span(
        name, context=context, attributes=dict(attributes or {}), start_time=started
    )
    with trace.use_span(one, end_on_exit=True, record_exception=True):
        yield one


def span_start(
    name: str, *, parent: str, attributes: Mapping[str, Any] | None = None, start_time: float
) -> Any:
    """A span ended later by ``span_finish`` (a model round: it spans several threads)."""
    tracer = _state["tracer"]
    if tracer is None or not parent:
        return None
    return tracer.start_span(
        name,
        context=_context_of(parent),
        attributes=dict(attributes or {}),
        start_time=int(start_time * 1e9),
    )


def span_finish(one: Any, *, attributes: Mapping[str, Any] | None = None, error: str = "") -> None:
    if one is None:
        return
    if attributes:
        one.set_attributes(dict(attributes))
    if error:
        from opentelemetry.trace import Status, StatusCode

        one.set_status(Status(StatusCode.ERROR, error[:500]))
    one.end()


def traceparent_of(one: Any) -> str:
    if one is None:
        return ""
    context = one.get_span_context()
    return _format(context.trace_id, context.span_id)


@contextlib.contextmanager
def activated(traceparent: str) -> Iterator[None]:
    """Make ``traceparent`` the current context in this thread for the block (the runner's
    database threads carry no context of their own)."""
    if not traceparent or not enabled():
        yield
        return
    from opentelemetry import context as otel_context

    token = otel_context.attach(_context_of(traceparent))
    try:
        yield
    finally:
        otel_context.detach(token)


def record(name: str, *, attributes: Mapping[str, Any], error: str = "") -> None:
    """A span of no duration below the current one (a tool call refused where it was bound)."""
    with span(name, attributes=attributes) as one:
        if one is not None and error:
            from opentelemetry.trace import Status, StatusCode

            one.set_status(Status(StatusCode.ERROR, error[:500]))


def now() -> float:
    return time.time()
