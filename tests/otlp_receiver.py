"""A real OTLP/HTTP receiver for the tests: ``POST /v1/traces`` with a protobuf
``ExportTraceServiceRequest`` (as the official exporter sends it, gzip or not) and
``POST /v1/logs`` with an ``ExportLogsServiceRequest`` (the audit exporters), decoded with
the official ``opentelemetry-proto`` classes. Each span and log record is kept as a plain dict
with its resource's attributes, with the request's headers."""

from __future__ import annotations

import gzip
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


class OTLPReceiver:
    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.logs: list[dict[str, Any]] = []
        self.answers: list[int] = []  # statuses to give to the next requests, then 200
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                with receiver._lock:
                    status = receiver.answers.pop(0) if receiver.answers else 200
                if status != 200:
                    self.send_response(status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if self.path == "/v1/logs":
                    reply = receiver._keep_logs(body, dict(self.headers.items()))
                    self.send_response(200)
                    self.send_header("Content-Type", "application/x-protobuf")
                    self.send_header("Content-Length", str(len(reply)))
                    self.end_headers()
                    self.wfile.write(reply)
                    return
                request = trace_service_pb2.ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver._keep(request)
                reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _keep(self, request: Any) -> None:
        found = []
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    found.append(
                        {
                            "name": span.name,
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent_id": span.parent_span_id.hex(),
                            "start": span.start_time_unix_nano,
                            "end": span.end_time_unix_nano,
                            "attributes": {a.key: _value(a.value) for a in span.attributes},
                            "status": span.status.code,
                            "resource": resource,
                        }
                    )
        with self._lock:
            self.spans.extend(found)

    def _keep_logs(self, body: bytes, headers: dict[str, str]) -> bytes:
        from opentelemetry.proto.collector.logs.v1 import logs_service_pb2

        request = logs_service_pb2.ExportLogsServiceRequest()
        request.ParseFromString(body)
        found = []
        for resource_logs in request.resource_logs:
            resource = {a.key: _value(a.value) for a in resource_logs.resource.attributes}
            for scope_logs in resource_logs.scope_logs:
                for record in scope_logs.log_records:
                    found.append(
                        {
                            "scope": scope_logs.scope.name,
                            "time": record.time_unix_nano,
                            "severity_number": record.severity_number,
                            "severity_text": record.severity_text,
                            "body": _value(record.body),
                            "attributes": {a.key: _value(a.value) for a in record.attributes},
                            "resource": resource,
                            "headers": {k.lower(): v for k, v in headers.items()},
                        }
                    )
        with self._lock:
            self.logs.extend(found)
        return logs_service_pb2.ExportLogsServiceResponse().SerializeToString()

    def trace(self, trace_id: str) -> list[dict[str, Any]]:
        with self._lock:
            return [s for s in self.spans if s["trace_id"] == trace_id]

    def __enter__(self) -> OTLPReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
