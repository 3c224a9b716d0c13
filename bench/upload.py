"""Uploading a 10 MB file into a conversation's workspace (issue 23), embedded mode.

- ``http_upload``: the page's request — ``POST /c/<id>/files/upload/?name=…`` with the file as
  the body, signed in, with the CSRF token — to the real server (``manage.py serve``) over
  loopback, until the answer (the file is then in the workspace);
- ``service_upload``: ``uploads.upload_store`` from an open file (the view's copy, no HTTP);
- baseline, in the same run, interleaved: ``shutil.copyfile`` of the same file on the same
  disk (what copying it takes).

Figures are ratios of medians and p95s against the copy. Writing the upload into the
workspace (``service_upload``) is the part this code owns: ≤ 2x the copy. The whole HTTP
request is reported beside it: there Daphne's receive path (Twisted reads the body into a
temporary file, then hands it to the application in messages) takes most of the time, and
a larger ``request_buffer_size`` did not change it (measured).
"""

from __future__ import annotations

import http.client
import os
import shutil
import socket
import time
from pathlib import Path
from typing import Any

from bench.common import emit, env_var_dir, setup_django, start_server, stats_ms, stop

SIZE = 10 * 1024 * 1024
RUNS = 20
WARMUP = 3


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def measure() -> dict[str, Any]:
    setup_django("embedded")
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    from chat_app.models import Conversation
    from chat_app.services.uploads import upload_store, workspace_for

    user = get_user_model().objects.create_user("bench-upload")
    conversation = Conversation.objects.create(owner=user)
    client = Client()
    client.force_login(user)
    session = client.cookies[settings.SESSION_COOKIE_NAME].value
    csrf = "b" * 32  # a cookie secret and the same token in the header
    var = Path(env_var_dir("embedded"))
    source = var / "bench-upload-source.csv"
    source.write_bytes(os.urandom(SIZE // 2).hex().encode())  # 10 MB of text
    workspace = workspace_for(conversation)
    port = _port()
    server = start_server("embedded", port)

    def http_upload() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        with open(source, "rb") as body:
            connection.request(
                "POST",
                f"/c/{conversation.pk}/files/upload/?name=bench.csv",
                body=body,
                headers={
                    "Content-Type": "text/csv",
                    "Content-Length": str(SIZE),
                    "X-CSRFToken": csrf,
                    "Cookie": f"{settings.SESSION_COOKIE_NAME}={session}; "
                    f"{settings.CSRF_COOKIE_NAME}={csrf}",
                },
            )
        response = connection.getresponse()
        answer = response.read()
        connection.close()
        assert response.status == 201, (response.status, answer[:300])
        (workspace / "bench.csv").unlink()

    def service_upload() -> None:
        with open(source, "rb") as body:
            upload_store(conversation=conversation, name="bench.csv", body=body)
        (workspace / "bench.csv").unlink()

    def copy() -> None:
        target = workspace / "bench-copy.csv"
        shutil.copyfile(source, target)
        target.unlink()

    samples: dict[str, list[float]] = {"copy": [], "http_upload": [], "service_upload": []}
    try:
        for i in range(WARMUP + RUNS):
            for name, fn in (("copy", copy), ("http_upload", http_upload), ("service", None)):
                fn = fn or service_upload
                key = "service_upload" if name == "service" else name
                started = time.perf_counter()
                fn()
                if i >= WARMUP:
                    samples[key].append(time.perf_counter() - started)
    finally:
        stop(server)
        source.unlink(missing_ok=True)
    out: dict[str, Any] = {"file_mb": SIZE // (1024 * 1024), "runs": RUNS}
    out["baseline_copy"] = stats_ms(samples["copy"])
    out["http_upload"] = stats_ms(samples["http_upload"])
    out["service_upload"] = stats_ms(samples["service_upload"])
    base = out["baseline_copy"]
    for key in ("http_upload", "service_upload"):
        out[f"{key}_median_vs_copy_ratio"] = round(out[key]["median_ms"] / base["median_ms"], 2)
        out[f"{key}_p95_vs_copy_ratio"] = round(out[key]["p95_ms"] / base["p95_ms"], 2)
    return out


if __name__ == "__main__":
    emit(measure())
