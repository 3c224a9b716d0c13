"""``LOG_FORMAT=json``: one object per line with host, process kind and the ids of the work a
line was written for (infra/logs.py)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import subprocess
import sys

from infra.logs import JsonFormatter, log_context, log_process_kind_set


def _line(message: str, *args: object) -> dict:
    record = logging.LogRecord("cc.test", logging.WARNING, __file__, 1, message, args, None)
    return json.loads(JsonFormatter().format(record))


def test_it_writes_one_object_with_host_and_process() -> None:
    log_process_kind_set("worker")
    line = _line("worker lost: %s", "t-1")
    assert line["message"] == "worker lost: t-1" and line["level"] == "WARNING"
    assert line["host"] == socket.gethostname() and line["process"] == "worker"
    assert line["pid"] == os.getpid() and line["logger"] == "cc.test"


def test_it_carries_the_ids_of_the_work_and_forgets_them_after() -> None:
    with log_context(turn=7, conversation=3):
        with log_context(call=11, turn=None):  # None leaves the outer id
            line = _line("inside")
            assert (line["turn"], line["call"], line["conversation"]) == (7, 11, 3)
        assert "call" not in _line("after the call")
    assert "turn" not in _line("outside")


def test_each_round_on_one_loop_keeps_its_own_ids() -> None:
    async def round_(turn: int) -> int:
        with log_context(turn=turn):
            await asyncio.sleep(0.01)
            return _line("in a round")["turn"]

    async def main() -> list[int]:
        return await asyncio.gather(*(round_(t) for t in range(20)))

    assert asyncio.run(main()) == list(range(20))


def test_it_keeps_a_traceback_in_the_object() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord(
            "cc.test", logging.ERROR, __file__, 1, "failed", (), sys.exc_info()
        )
    line = json.loads(JsonFormatter().format(record))
    assert "ValueError: boom" in line["exception"]


def test_the_settings_choose_the_format_and_refuse_another() -> None:
    code = (
        "import django, logging; django.setup(); "
        "logging.getLogger('cc.x').warning('hello %s', 'json')"
    )
    env = {**os.environ, "LOG_FORMAT": "json", "DJANGO_SETTINGS_MODULE": "controlcenter.settings"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(x) for x in done.stderr.splitlines() if x.startswith("{")]
    assert any(x["message"] == "hello json" and x["logger"] == "cc.x" for x in lines)
    env["LOG_FORMAT"] = "xml"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0 and "LOG_FORMAT must be plain or json" in done.stderr
