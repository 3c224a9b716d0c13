"""Settings come from the environment in one place (controlcenter/settings.py), are validated
as they load, and loading them changes nothing on disk but a first start's secret key."""

from __future__ import annotations

import os
import runpy
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from tests.conftest import ROOT

SETTINGS = ROOT / "controlcenter" / "settings.py"


def load(monkeypatch: pytest.MonkeyPatch, **env: str) -> dict[str, Any]:
    """The settings module's names as it would load in a process with ``env``."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(SETTINGS))


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in list(os.environ):
        if name.startswith(("SANDBOX_", "CHROMIUM_", "MEMORY_", "CC_VAR_DIR", "SECRET_KEY")) or (
            name in ("HOST", "PORT", "WORKSPACES_DIR", "SKILLS_DIR", "MCP_SERVERS_VENV")
        ):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_it_refuses_an_empty_var_dir_and_writes_nothing(
    monkeypatch: pytest.MonkeyPatch, clean_env: Path
) -> None:
    """Issue 23 "CC_VAR_DIR": an empty value used to put secret_key into the current
    directory (the repository, for `make run`)."""
    with pytest.raises(ImproperlyConfigured, match="CC_VAR_DIR is set but empty"):
        load(monkeypatch, CC_VAR_DIR="")
    assert list(clean_env.iterdir()) == []


@pytest.mark.parametrize("name", ["WORKSPACES_DIR", "SKILLS_DIR", "MCP_SERVERS_VENV"])
def test_it_refuses_other_empty_directories(
    monkeypatch: pytest.MonkeyPatch, clean_env: Path, name: str
) -> None:
    with pytest.raises(ImproperlyConfigured, match=f"{name} is set but empty"):
        load(monkeypatch, CC_VAR_DIR=str(clean_env / "var"), SECRET_KEY="k" * 50, **{name: " "})


def test_loading_the_settings_creates_no_directory(
    monkeypatch: pytest.MonkeyPatch, clean_env: Path
) -> None:
    names = load(monkeypatch, CC_VAR_DIR=str(clean_env / "var"), SECRET_KEY="k" * 50)
    assert names["VAR_DIR"] == clean_env / "var"
    assert not (clean_env / "var").exists()  # made when the apps are ready (controlcenter.apps)


def test_a_first_start_writes_the_secret_key_and_later_ones_read_it(
    monkeypatch: pytest.MonkeyPatch, clean_env: Path
) -> None:
    first = load(monkeypatch, CC_VAR_DIR=str(clean_env / "var"))["SECRET_KEY"]
    assert (clean_env / "var" / "secret_key").read_text() == first
    assert [p.name for p in (clean_env / "var").iterdir()] == ["secret_key"]
    assert load(monkeypatch)["SECRET_KEY"] == first


def test_it_reads_the_sandbox_browser_memory_and_server_settings(
    monkeypatch: pytest.MonkeyPatch, clean_env: Path
) -> None:
    names = load(
        monkeypatch,
        CC_VAR_DIR=str(clean_env / "var"),
        SECRET_KEY="k" * 50,
        SANDBOX_BACKEND="BWRAP",
        SANDBOX_MEMORY="256m",
        SANDBOX_PIDS="64",
        SANDBOX_CPUS="0.5",
        SANDBOX_DOCKER_RUNNER="0",
        SANDBOX_POOL_LABEL=" ci ",
        CHROMIUM_SANDBOX="true",
        CHROMIUM_PATH="/opt/chromium",
        MEMORY_LOCAL_MODEL_DIR="/opt/minilm",
        HOST="0.0.0.0",
        PORT="9000",
    )
    assert names["SANDBOX_BACKEND"] == "bubblewrap"
    assert (names["SANDBOX_MEMORY"], names["SANDBOX_PIDS"], names["SANDBOX_CPUS"]) == (
        256 << 20,
        64,
        0.5,
    )
    assert names["SANDBOX_DOCKER_RUNNER"] is False
    assert names["SANDBOX_POOL_LABEL"] == "ci"
    assert names["CHROMIUM_SANDBOX"] is True
    assert names["CHROMIUM_PATH"] == "/opt/chromium"
    assert names["MEMORY_LOCAL_MODEL_DIR"] == "/opt/minilm"
    assert (names["HOST"], names["PORT"]) == ("0.0.0.0", 9000)


def test_the_defaults(monkeypatch: pytest.MonkeyPatch, clean_env: Path) -> None:
    names = load(monkeypatch, CC_VAR_DIR=str(clean_env / "var"), SECRET_KEY="k" * 50)
    assert names["SANDBOX_BACKEND"] == "auto"
    assert names["SANDBOX_IMAGE"] == "controlcenter-sandbox:latest"
    assert (names["SANDBOX_UID"], names["SANDBOX_MEMORY"], names["SANDBOX_PIDS"]) == (
        10001,
        512 << 20,
        128,
    )
    assert (names["SANDBOX_CPUS"], names["SANDBOX_IDLE_SECONDS"]) == (1.0, 600.0)
    assert names["SANDBOX_DOCKER_RUNNER"] is True
    assert names["CHROMIUM_SANDBOX"] is False
    assert names["CHROMIUM_PATH"] == names["MEMORY_LOCAL_MODEL_DIR"] == ""
    assert (names["HOST"], names["PORT"]) == ("127.0.0.1", 8000)


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("SANDBOX_BACKEND", "lxc", "SANDBOX_BACKEND='lxc' must be one of"),
        ("SANDBOX_PIDS", "lots", "SANDBOX_PIDS='lots' is not an integer"),
        ("SANDBOX_UID", "-1", "SANDBOX_UID=-1 must be at least 1"),
        ("SANDBOX_MEMORY", "big", "SANDBOX_MEMORY='big' is not a size"),
        ("SANDBOX_CPUS", "0", "SANDBOX_CPUS='0' must be positive"),
        ("SANDBOX_IDLE_SECONDS", "soon", "SANDBOX_IDLE_SECONDS='soon' is not a number"),
        ("SANDBOX_DOCKER_RUNNER", "maybe", "SANDBOX_DOCKER_RUNNER='maybe' is not a boolean"),
        ("CHROMIUM_SANDBOX", "perhaps", "CHROMIUM_SANDBOX='perhaps' is not a boolean"),
        ("PORT", "http", "PORT='http' is not an integer"),
    ],
)
def test_it_names_a_bad_value(
    monkeypatch: pytest.MonkeyPatch, clean_env: Path, name: str, value: str, words: str
) -> None:
    with pytest.raises(ImproperlyConfigured, match=words):
        load(monkeypatch, CC_VAR_DIR=str(clean_env / "var"), SECRET_KEY="k" * 50, **{name: value})
