"""How a batch of sealed records reaches each kind of receiver. ``send(exporter, rows)``
returns a note (or "") when the receiver took every record, and raises ``Transient`` (nothing
is known to be taken: send the same records again later) or ``Rejected`` (the receiver
refused these records for what they are: trying them again as they are will not help).

- **syslog**: RFC 5424 messages with octet-counting framing (RFC 6587 3.4.1, the framing
  RFC 5425 prescribes for TLS), over TLS (the standard library's ``ssl``) or plain TCP. No
  syslog library: the stdlib handler writes RFC 3164 over UDP or unframed TCP, and the
  RFC 5424 packages on PyPI are ``logging`` handlers that send a message at a time and report
  nothing back; a batch here must either go out whole or be known not to. Syslog has no
  acknowledgement: after writing, the connection is closed in order (TLS close_notify, then
  our FIN) and the server's close is awaited — a server that read our close has read
  everything before it; a reset on the way is a failure, so the batch is sent again.
- **hec**: Splunk's HTTP Event Collector (``POST /services/collector/event``,
  ``Authorization: Splunk <token>``), events concatenated in one body.
- **otlp**: an ``ExportLogsServiceRequest`` built with the official ``opentelemetry-proto``
  classes, ``POST …/v1/logs`` as ``application/x-protobuf`` (OTLP/HTTP).
- **file**: one JSONL (or CEF) file per batch under ``AUDIT_EXPORT_DIR``.
- **s3**: one object per batch in an S3-compatible bucket, with ``boto3`` (AWS's SDK: it
  signs requests for AWS, MinIO, Ceph and the rest alike); an optional extra,
  ``pip install 'controlcenter[s3]'``. The endpoint is checked by the SSRF guard before boto3
  connects (boto3 resolves the name again itself: an endpoint is an admin's choice, not a
  person's).

HTTP goes through the HTTP tool's SSRF-guarded client (``fetch``), and a syslog host through
the same guard's ``check_url``: private and loopback hosts only where the admin allowed them
for this exporter, cloud metadata never.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import ssl
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from django.conf import settings

from infra.audit_chain import now_stamp
from platform_app.audit_export import formats
from platform_app.models import AuditExporter

APP_NAME = "controlcenter"
# RFC 5424 facility 13, "log audit".
FACILITY = 13
# The structured-data id: RFC 5612's example enterprise number, as RFC 5424's own examples do
# (a registered number would replace it; receivers match on the name before the @).
SD_ID = "audit@32473"
# HTTP answers that say "this content is refused": the record is tried a few times more, then
# set aside. Any other failure (401/403 token, 404 path, 429, 5xx, no answer) says nothing
# about the record: it waits, in order, with back-off.
REJECTING_STATUSES = {400, 413, 422}


class Transient(Exception):
    """Not delivered; the same records go again after a back-off."""


class Rejected(Exception):
    """The receiver refused these records for their content."""


def _timeout() -> float:
    return float(settings.AUDIT_EXPORT_TIMEOUT_SECONDS)


def _hostname() -> str:
    name = socket.gethostname() or "-"
    return re.sub(r"[^\x21-\x7e]", "-", name)[:255]


def ssl_context(exporter: AuditExporter) -> ssl.SSLContext:
    """The system's trust store, or the exporter's own CA; or no verification at all when
    the admin turned it off (shown in red on the page)."""
    context = ssl.create_default_context(cadata=exporter.ca_pem or None)
    if not exporter.verify_tls:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _private(exporter: AuditExporter, host: str) -> list[str]:
    return [host] if exporter.allow_private else []


# --- syslog -----------------------------------------------------------------------------------
def _sd_escape(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("]", "\\]")


def syslog_message(row: dict[str, Any], fmt: str, hostname: str | None = None) -> bytes:
    """One RFC 5424 message (without framing): the record's time, kind as MSGID, its place
    in the chain as structured data, the record as MSG (JSON or CEF, UTF-8)."""
    record = row["record"]
    pri = FACILITY * 8 + formats.syslog_severity(record)
    stamp = record.get("created_at") or now_stamp()
    msgid = re.sub(r"[^\x21-\x7e]", "-", record.get("kind") or "-")[:32]
    sd = (
        f'[{SD_ID} seq="{_sd_escape(row["seq"])}" hash="{_sd_escape(row["hash"])}" '
        f'prev="{_sd_escape(row["prev"])}"]'
    )
    head = f"<{pri}>1 {stamp} {hostname or _hostname()} {APP_NAME} - {msgid} {sd} "
    return head.encode() + formats.render(row, fmt).encode("utf-8")


def octet_counted(message: bytes) -> bytes:
    return str(len(message)).encode() + b" " + message


def _syslog_connect(exporter: AuditExporter) -> socket.socket:
    from tools_app.errors import PolicyDenied, ToolError
    from tools_app.netguard import check_url

    host = exporter.host.strip().strip("[]")
    port = exporter.port or (6514 if exporter.transport == AuditExporter.Transport.TLS else 514)
    shown = f"[{host}]" if ":" in host else host
    try:
        target = check_url(f"https://{shown}:{port}/", private_allowed=_private(exporter, host))
    except PolicyDenied as exc:
        raise Transient(f"refused by the SSRF guard: {exc.reason}") from exc
    except ToolError as exc:
        raise Transient(f"not delivered: {exc.message}") from exc
    try:
        raw = socket.create_connection((target.address, port), timeout=_timeout())
    except OSError as exc:
        raise Transient(f"cannot connect to {shown}:{port}: {exc.strerror or exc}") from exc
    if exporter.transport != AuditExporter.Transport.TLS:
        return raw
    try:
        return ssl_context(exporter).wrap_socket(raw, server_hostname=host)
    except (ssl.SSLError, OSError) as exc:
        raw.close()
        raise Transient(f"TLS with {shown}:{port} failed: {_ssl_reason(exc)}") from exc


def _ssl_reason(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"certificate verify failed ({exc.verify_message})"
    return str(getattr(exc, "reason", None) or exc)


def _close_in_order(sock: socket.socket) -> None:
    """Close our side and wait for the server's: it has then read all we wrote."""
    if isinstance(sock, ssl.SSLSocket):
        # close_notify; a server that closes without answering has read up to it.
        with contextlib.suppress(ssl.SSLError, OSError):
            sock = sock.unwrap()
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_WR)
    deadline = time.monotonic() + _timeout()
    while time.monotonic() < deadline:
        try:
            if not sock.recv(4096):
                return
        except TimeoutError:
            return  # no close from the server in time: what was written was written
        except ssl.SSLError:
            return
        except OSError as exc:  # reset: it may not have read everything
            raise Transient(f"the syslog server broke the connection: {exc}") from exc


def syslog_send(exporter: AuditExporter, rows: list[dict[str, Any]]) -> str:
    payload = b"".join(octet_counted(syslog_message(row, exporter.format)) for row in rows)
    sock = _syslog_connect(exporter)
    try:
        sock.sendall(payload)
        _close_in_order(sock)
    except Transient:
        raise
    except (ssl.SSLError, OSError) as exc:
        raise Transient(f"sending to the syslog server failed: {_ssl_reason(exc)}") from exc
    finally:
        sock.close()
    return ""


# --- HTTP (HEC, OTLP) -------------------------------------------------------------------------
def _post(
    exporter: AuditExporter,
    url: str,
    body: str | bytes,
    headers: dict[str, str],
    *,
    refuses_content: Callable[[int, str], bool] | None = None,
) -> Any:
    """POST through the SSRF guard; Rejected when the answer refuses the content
    (``refuses_content``, by default a status in REJECTING_STATUSES), else Transient."""
    from tools_app.errors import PolicyDenied, ToolError
    from tools_app.executors.http.client import fetch

    host = urlsplit(url).hostname or ""
    try:
        result = fetch(
            "POST",
            url,
            headers=headers,
            body=body,
            timeout=_timeout(),
            max_bytes=20_000,
            follow_redirects=False,
            private_allowed=_private(exporter, host),
            ssl_context=ssl_context(exporter) if url.startswith("https:") else None,
        )
    except PolicyDenied as exc:
        raise Transient(f"refused by the SSRF guard: {exc.reason}") from exc
    except ToolError as exc:
        raise Transient(f"not delivered: {exc.message}") from exc
    code = result.status
    if 200 <= code < 300:
        return result
    excerpt = (result.text or "").strip()[:300]
    words = f"answered HTTP {code}" + (f": {excerpt}" if excerpt else "")
    refused = (
        refuses_content(code, result.text or "") if refuses_content else code in REJECTING_STATUSES
    )
    if refused:
        raise Rejected(words)
    raise Transient(words)


# HEC's answer codes that refuse the events themselves (5 no data, 6 invalid data format,
# 12 event field required, 13 event field blank, 15 error in indexed fields). Its other 400s
# are the token's configuration (7 incorrect index, 10/11 data channel, 14 acknowledgement
# disabled, 16 query-string auth): every record would be refused alike, so they wait instead.
HEC_CONTENT_CODES = {5, 6, 12, 13, 15}


def hec_refuses_content(status: int, text: str) -> bool:
    if status == 413:
        return True
    if status != 400:
        return False
    try:
        code = json.loads(text).get("code")
    except (ValueError, AttributeError):
        return True  # a 400 without HEC's body: a compatible collector refusing the data
    return code is None or code in HEC_CONTENT_CODES


def hec_url(url: str) -> str:
    url = url.rstrip("/")
    return url if url.endswith("/services/collector/event") else url + "/services/collector/event"


def hec_event(row: dict[str, Any], fmt: str, hostname: str) -> dict[str, Any]:
    record = row["record"]
    created = record.get("created_at")
    when = datetime.fromisoformat(created).timestamp() if created else time.time()
    return {
        "time": round(when, 6),
        "host": hostname,
        "source": APP_NAME,
        "sourcetype": f"controlcenter:audit:{fmt}",
        "event": formats.json_event(row) if fmt == "json" else formats.cef_line(row),
    }


def hec_send(exporter: AuditExporter, rows: list[dict[str, Any]]) -> str:
    hostname = _hostname()
    body = "\n".join(
        json.dumps(hec_event(row, exporter.format, hostname), ensure_ascii=False) for row in rows
    )
    headers = {"Authorization": f"Splunk {exporter.token}", "Content-Type": "application/json"}
    _post(exporter, hec_url(exporter.url), body, headers, refuses_content=hec_refuses_content)
    return ""


def otlp_url(url: str) -> str:
    url = url.rstrip("/")
    return url if url.endswith("/v1/logs") else url + "/v1/logs"


def otlp_headers(text: str) -> dict[str, str]:
    """``name=value`` pairs, comma-separated or one a line (the ``OTEL_EXPORTER_OTLP_HEADERS``
    format, values percent-decoded)."""
    headers: dict[str, str] = {}
    for part in re.split(r"[,\n]", text or ""):
        name, sep, value = part.partition("=")
        if sep and name.strip():
            headers[unquote(name.strip())] = unquote(value.strip())
    return headers


# OpenTelemetry's severity numbers for the syslog severities used (the log data model's
# mapping): informational → INFO, notice → INFO2, warning → WARN, critical → FATAL.
_OTEL_SEVERITY = {6: (9, "INFO"), 5: (10, "INFO2"), 4: (13, "WARN"), 2: (21, "FATAL")}


def otlp_request(rows: list[dict[str, Any]], fmt: str) -> Any:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
    from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
    from opentelemetry.proto.resource.v1.resource_pb2 import Resource

    def attr(key: str, value: Any) -> KeyValue:
        if isinstance(value, bool):
            return KeyValue(key=key, value=AnyValue(bool_value=value))
        if isinstance(value, int):
            return KeyValue(key=key, value=AnyValue(int_value=value))
        return KeyValue(key=key, value=AnyValue(string_value=str(value)))

    observed = time.time_ns()
    records = []
    for row in rows:
        record = row["record"]
        created = record.get("created_at")
        when = int(datetime.fromisoformat(created).timestamp() * 1e9) if created else observed
        number, text = _OTEL_SEVERITY[formats.syslog_severity(record)]
        attributes = [
            attr("event.name", f"controlcenter.audit.{record.get('kind') or 'record'}"),
            attr("cc.audit.seq", int(row["seq"])),
            attr("cc.audit.hash", row["hash"]),
            attr("cc.audit.prev", row["prev"]),
            attr("cc.audit.kind", record.get("kind") or ""),
        ]
        for key, name in (
            ("user.name", "username"),
            ("cc.audit.tool", "tool"),
            ("cc.audit.group", "group"),
            ("cc.audit.status", "status"),
        ):
            if record.get(name):
                attributes.append(attr(key, record[name]))
        records.append(
            LogRecord(
                time_unix_nano=when,
                observed_time_unix_nano=observed,
                severity_number=number,  # type: ignore[arg-type]
                severity_text=text,
                body=AnyValue(string_value=formats.render(row, fmt)),
                attributes=attributes,
            )
        )
    resource = Resource(
        attributes=[
            attr("service.name", os.environ.get("OTEL_SERVICE_NAME") or APP_NAME),
            attr("host.name", _hostname()),
        ]
    )
    scope = InstrumentationScope(name="controlcenter.audit", version=formats.VERSION)
    return ExportLogsServiceRequest(
        resource_logs=[
            ResourceLogs(
                resource=resource, scope_logs=[ScopeLogs(scope=scope, log_records=records)]
            )
        ]
    )


def otlp_send(exporter: AuditExporter, rows: list[dict[str, Any]]) -> str:
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse

    body = otlp_request(rows, exporter.format).SerializeToString()
    headers = {**otlp_headers(exporter.headers), "Content-Type": "application/x-protobuf"}
    result = _post(exporter, otlp_url(exporter.url), body, headers)
    answer = ExportLogsServiceResponse()
    try:
        answer.ParseFromString(result.raw or b"")
    except DecodeError:
        return ""
    rejected = answer.partial_success.rejected_log_records
    if rejected:
        # Accepted as a request (the protocol says not to send it again); which records the
        # collector dropped it does not say.
        return (
            f"the collector dropped {rejected} of {len(rows)} records "
            f"(seq {rows[0]['seq']}–{rows[-1]['seq']}): {answer.partial_success.error_message}"
        )
    return ""


# --- files ------------------------------------------------------------------------------------
def export_root() -> Path:
    return Path(settings.AUDIT_EXPORT_DIR)


def export_directory(exporter: AuditExporter) -> Path:
    return export_root() / exporter.directory


def _first_seq(path: Path) -> int:
    try:
        return int(path.stem.split("-")[1])
    except (IndexError, ValueError):
        return 0


def file_send(exporter: AuditExporter, rows: list[dict[str, Any]]) -> str:
    """One file per batch, ``<day>/audit-<first seq>-<last seq>.jsonl`` (UTC day of the
    export), written to a temporary name, flushed to disk and renamed: a reader never sees
    half a file. Files are written whole and the cursor saved after each, so a file that
    starts after the cursor was left by a run that did not save it (a crash between the
    rename and the commit): it is removed and written again, and no record is in two files."""
    first, last = int(rows[0]["seq"]), int(rows[-1]["seq"])
    suffix = "cef" if exporter.format == "cef" else "jsonl"
    directory = export_directory(exporter)
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    try:
        (directory / day).mkdir(parents=True, exist_ok=True)
        for path in directory.glob(f"*/audit-*.{suffix}"):
            if _first_seq(path) > exporter.cursor:
                path.unlink()  # written by a run whose cursor was not saved
        final = directory / day / f"audit-{first:012d}-{last:012d}.{suffix}"
        descriptor, temporary = tempfile.mkstemp(dir=directory / day, prefix=".audit-")
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            for row in rows:
                out.write(formats.render(row, exporter.format) + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, final)
    except OSError as exc:
        raise Transient(f"cannot write to {directory}: {exc.strerror or exc}") from exc
    return ""


def s3_key(exporter: AuditExporter, first: int) -> str:
    """Named by the batch's first seq only: a batch sent again after a crash (the cursor at
    the same place) overwrites its object rather than adding a second copy."""
    prefix = exporter.directory.strip("/")
    suffix = "cef" if exporter.format == "cef" else "jsonl"
    name = f"audit-{first:012d}.{suffix}"
    return f"{prefix}/{name}" if prefix else name


def s3_send(exporter: AuditExporter, rows: list[dict[str, Any]]) -> str:
    try:
        import boto3
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError as exc:
        raise Transient("boto3 is not installed: pip install 'controlcenter[s3]'") from exc
    from tools_app.errors import PolicyDenied, ToolError
    from tools_app.netguard import check_url

    endpoint = exporter.url.strip() or None
    if endpoint:
        host = urlsplit(endpoint).hostname or ""
        try:
            check_url(endpoint, private_allowed=_private(exporter, host))
        except PolicyDenied as exc:
            raise Transient(f"refused by the SSRF guard: {exc.reason}") from exc
        except ToolError as exc:
            raise Transient(f"not delivered: {exc.message}") from exc
    first, last = int(rows[0]["seq"]), int(rows[-1]["seq"])
    body = "".join(formats.render(row, exporter.format) + "\n" for row in rows).encode()
    with contextlib.ExitStack() as stack:
        verify: bool | str = exporter.verify_tls
        if exporter.verify_tls and exporter.ca_pem:
            bundle = stack.enter_context(tempfile.NamedTemporaryFile("w", suffix=".pem"))
            bundle.write(exporter.ca_pem)
            bundle.flush()
            verify = bundle.name
        client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name=exporter.region or None,
            aws_access_key_id=exporter.access_key_id or None,
            aws_secret_access_key=exporter.secret_access_key or None,
            verify=verify,
            config=Config(
                connect_timeout=_timeout(),
                read_timeout=_timeout(),
                retries={"max_attempts": 1},  # the exporter's own back-off retries
                s3={"addressing_style": "path"},
            ),
        )
        try:
            client.put_object(
                Bucket=exporter.bucket,
                Key=s3_key(exporter, first),
                Body=body,
                ContentType="application/x-ndjson" if exporter.format == "json" else "text/plain",
                Metadata={"first-seq": str(first), "last-seq": str(last)},
            )
        except ClientError as exc:
            # Access denied, no such bucket, throttling, 5xx: nothing about the records.
            error = exc.response.get("Error", {})
            raise Transient(
                f"S3 answered {error.get('Code', '?')}: {error.get('Message', '')}".strip()
            ) from exc
        except BotoCoreError as exc:
            raise Transient(f"not delivered: {exc}") from exc
    return ""


SENDERS: dict[str, Callable[[AuditExporter, list[dict[str, Any]]], str]] = {
    AuditExporter.Kind.SYSLOG: syslog_send,
    AuditExporter.Kind.HEC: hec_send,
    AuditExporter.Kind.OTLP: otlp_send,
    AuditExporter.Kind.FILE: file_send,
    AuditExporter.Kind.S3: s3_send,
}


def send(exporter: AuditExporter, rows: list[dict[str, Any]]) -> str:
    return SENDERS[exporter.kind](exporter, rows)
