"""System checks name what an operator got wrong (``manage.py check``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core import checks

from controlcenter.apps import var_dir_usable
from platform_app.checks import memory_model_dir_complete
from tools_app.checks import chromium_path_exists, sandbox_reachable
from tools_app.sandbox import selection


@pytest.fixture
def fresh_sandboxes() -> Any:
    selection.reset_for_tests()
    yield
    selection.reset_for_tests()


def ids(messages: list[checks.CheckMessage]) -> list[str | None]:
    return [m.id for m in messages]


def test_it_warns_when_the_sandbox_backend_is_unreachable(
    settings: Any, monkeypatch: pytest.MonkeyPatch, fresh_sandboxes: None
) -> None:
    settings.SANDBOX_BACKEND = "docker"
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    [warning] = sandbox_reachable()
    assert warning.id == "tools_app.W001" and warning.level == checks.WARNING
    assert warning.msg.startswith("sandbox backend docker is unreachable: Docker engine not")
    assert "nonexistent/docker.sock" in warning.msg  # the reason, as the backend says it


def test_the_sandbox_check_leaves_the_automatic_choice_open(
    settings: Any, fresh_sandboxes: None
) -> None:
    settings.SANDBOX_BACKEND = "auto"
    sandbox_reachable()
    assert selection._auto_choice is None  # decided by the first tool call, as before


def test_it_warns_that_none_means_no_isolation(settings: Any, fresh_sandboxes: None) -> None:
    settings.SANDBOX_BACKEND = "none"
    assert ids(sandbox_reachable()) == ["tools_app.W002"]


def test_the_sandbox_check_is_a_deployment_check() -> None:
    """It talks to the Docker engine: every management command (and the agent runner's
    health check) runs the ordinary checks, so it runs only with ``check --deploy``."""
    registry = checks.registry.registry
    assert sandbox_reachable in registry.get_checks(include_deployment_checks=True)
    assert sandbox_reachable not in registry.get_checks(include_deployment_checks=False)
    assert "sandbox" in registry.tags_available(deployment_checks=True)


def test_it_warns_about_a_chromium_path_that_is_not_there(settings: Any, tmp_path: Path) -> None:
    settings.CHROMIUM_PATH = ""
    assert chromium_path_exists() == []
    settings.CHROMIUM_PATH = str(tmp_path / "chromium")
    assert ids(chromium_path_exists()) == ["tools_app.W003"]


def test_it_warns_about_an_incomplete_local_model_dir(settings: Any, tmp_path: Path) -> None:
    settings.MEMORY_LOCAL_MODEL_DIR = ""
    assert memory_model_dir_complete() == []
    settings.MEMORY_LOCAL_MODEL_DIR = str(tmp_path)
    [warning] = memory_model_dir_complete()
    assert warning.id == "platform.W001" and "model.safetensors is missing" in warning.msg


def test_it_refuses_a_state_directory_it_cannot_write(settings: Any, tmp_path: Path) -> None:
    assert var_dir_usable() == []
    settings.VAR_DIR = tmp_path / "a-file"
    settings.VAR_DIR.write_text("")
    [error] = var_dir_usable()
    assert error.id == "controlcenter.E001" and error.level == checks.ERROR
