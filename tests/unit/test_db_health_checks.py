"""Every process checks a database connection before it uses it again, so a PostgreSQL
restart or failover (every connection terminated) costs no request or task
(tests/integration/test_db_failover.py runs that end to end)."""

from __future__ import annotations

import runpy
import weakref
from pathlib import Path
from types import SimpleNamespace

import pytest
from celery.signals import task_postrun, task_prerun
from celery.utils.dispatch import Signal
from django.db.utils import ConnectionHandler
from psycopg_pool import ConnectionPool

from tests.conftest import ROOT

SETTINGS = ROOT / "controlcenter" / "settings.py"
URL = "postgres://postgres@127.0.0.1:5432/health_probe"


def database(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **env: str) -> dict[str, object]:
    monkeypatch.setenv("CC_VAR_DIR", str(tmp_path))
    monkeypatch.setenv("DATABASE_URL", URL)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return dict(runpy.run_path(str(SETTINGS))["DATABASES"]["default"])


def test_it_has_the_pool_check_a_connection_before_lending_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings_dict = database(monkeypatch, tmp_path, DB_POOL="true")
    assert settings_dict["CONN_HEALTH_CHECKS"] is True
    # Its own alias: pools are kept per alias, and the tests' own must stay as it is.
    dummy = {"ENGINE": "django.db.backends.dummy"}
    wrapper = ConnectionHandler({"default": dummy, "health-probe": settings_dict})["health-probe"]
    try:
        pool = wrapper.pool  # built, not opened: nothing connects
        assert pool is not None and pool._check == ConnectionPool.check_connection
    finally:
        wrapper.close_pool()


def test_it_checks_a_kept_connection_without_the_pool(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings_dict = database(monkeypatch, tmp_path, DB_POOL="false")
    assert settings_dict["CONN_HEALTH_CHECKS"] is True
    assert "pool" not in settings_dict.get("OPTIONS", {})


def receivers(signal: Signal) -> list[object]:
    return [r() if isinstance(r, weakref.ReferenceType) else r for _, r in signal.receivers]


def test_it_closes_broken_connections_around_every_task(monkeypatch: pytest.MonkeyPatch) -> None:
    """Celery's fixup keeps a worker thread's connection across tasks (CELERY_DB_REUSE_MAX):
    our receivers close it before and after each task when it broke or aged out, except
    around a task run eagerly, in its caller's thread (and maybe its transaction)."""
    from infra import celery_app

    handler = celery_app._close_broken_connections
    assert handler in receivers(task_prerun) and handler in receivers(task_postrun)
    closed: list[str] = []
    monkeypatch.setattr(celery_app, "close_connections_quietly", closed.append)
    handler(sender=SimpleNamespace(request=SimpleNamespace(is_eager=True)))
    assert closed == []
    handler(sender=SimpleNamespace(request=SimpleNamespace(is_eager=False)))
    assert closed == ["celery task"]
