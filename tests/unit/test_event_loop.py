"""The web server's and the agent runner's event loops are uvloop's (issue 38: a turn's CPU),
unless ``CC_EVENT_LOOP=asyncio`` keeps the standard library's."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading

import pytest

from infra.event_loop import new_event_loop
from tests.conftest import ROOT, child_env

uvloop = pytest.importorskip("uvloop")  # not built for Windows (pyproject's marker)


@pytest.fixture(autouse=True)
def default_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a deployment gets without setting ``CC_EVENT_LOOP``."""
    monkeypatch.delenv("CC_EVENT_LOOP", raising=False)


# What ``manage.py serve`` does before Django's apps load, then the apps (Daphne's among them,
# which installs Twisted's reactor on a standard loop unless one is installed).
SERVE = """
import sys
from infra.event_loop import web_loop_install
web_loop_install(["manage.py", {command!r}])
import django
django.setup()
from twisted.internet import reactor
print(type(reactor._asyncioEventloop).__module__)
"""


def _serve(command: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**child_env(), **env}
    if "CC_EVENT_LOOP" not in env:
        environment.pop("CC_EVENT_LOOP", None)
    return subprocess.run(
        [sys.executable, "-c", SERVE.format(command=command)],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _serve_loop(command: str, **env: str) -> str:
    done = _serve(command, **env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_web_server_runs_on_uvloop() -> None:
    assert _serve_loop("serve") == "uvloop"


def test_an_operator_can_keep_the_standard_loop() -> None:
    assert _serve_loop("serve", CC_EVENT_LOOP="asyncio") == "asyncio.unix_events"


def test_a_misspelt_choice_stops_the_server_with_the_choices() -> None:
    done = _serve("serve", CC_EVENT_LOOP="std")
    assert done.returncode != 0
    assert "CC_EVENT_LOOP='std' must be one of uvloop, asyncio" in done.stderr


def test_other_commands_leave_the_loop_alone() -> None:
    assert _serve_loop("migrate") == "asyncio.unix_events"


def test_the_runners_loop_is_uvloop_and_the_standard_one_on_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loop = new_event_loop()
    try:
        assert isinstance(loop, uvloop.Loop)
    finally:
        loop.close()
    monkeypatch.setenv("CC_EVENT_LOOP", "asyncio")
    loop = new_event_loop()
    try:
        assert not isinstance(loop, uvloop.Loop)
    finally:
        loop.close()


@pytest.mark.django_db(transaction=True)
def test_the_embedded_runner_runs_its_rounds_on_uvloop() -> None:
    from chat_app.runner import AgentRunner

    runner = AgentRunner(name="loop-check")
    runner.start()
    try:
        assert runner.loop is not None
        assert isinstance(runner.loop, uvloop.Loop)
        ran = threading.Event()
        runner.loop.call_soon_threadsafe(ran.set)
        assert ran.wait(5)
        assert asyncio.run_coroutine_threadsafe(asyncio.sleep(0, "ok"), runner.loop).result(5)
    finally:
        runner.stop()
