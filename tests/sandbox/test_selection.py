"""Choosing a backend: docker when it works, else bubblewrap, never a silent "none"."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.sandbox.conftest import unavailable
from tools_app.sandbox import selection
from tools_app.sandbox.base import SandboxError, normalize_cwd, parse_size
from tools_app.sandbox.docker_containers import container_name


@pytest.fixture(autouse=True)
def fresh_selection(settings: Any) -> Iterator[None]:
    settings.SANDBOX_BACKEND = "auto"
    selection.reset_for_tests()
    yield
    selection.reset_for_tests()


@pytest.mark.docker
def test_it_prefers_docker_when_engine_and_image_are_there(docker_sandbox: object) -> None:
    if isinstance(docker_sandbox, str):
        unavailable(docker_sandbox)
    assert selection.get_sandbox().name == "docker"


def test_it_falls_back_to_bubblewrap_without_docker(
    monkeypatch: pytest.MonkeyPatch, bubblewrap_sandbox: object
) -> None:
    if isinstance(bubblewrap_sandbox, str):
        unavailable(bubblewrap_sandbox)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    assert selection.get_sandbox().name == "bubblewrap"


def test_it_never_falls_back_to_no_sandbox(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap, prlimit or setpriv to be found
    with pytest.raises(SandboxError) as caught:
        selection.get_sandbox()
    message = str(caught.value)
    assert "Docker engine not reachable" in message
    assert "bubblewrap: missing on this host" in message
    assert "SANDBOX_BACKEND=none" in message


def test_it_runs_without_a_sandbox_only_when_named(settings: Any) -> None:
    assert selection.get_sandbox("none").name == "none"
    settings.SANDBOX_BACKEND = "none"
    assert selection.get_sandbox().name == "none"


def test_it_rejects_an_unknown_backend() -> None:
    # A tool group's own backend setting; SANDBOX_BACKEND itself is checked as settings load
    # (tests/unit/test_settings.py).
    with pytest.raises(SandboxError, match="unknown sandbox backend 'lxc'"):
        selection.get_sandbox("lxc")


def test_it_keeps_one_instance_per_backend() -> None:
    assert selection.get_sandbox("bubblewrap") is selection.get_sandbox("bwrap")
    assert selection.get_sandbox("none") is selection.get_sandbox(" NONE ")


def test_it_takes_its_limits_from_the_settings(settings: Any) -> None:
    settings.SANDBOX_MEMORY = 256 << 20
    settings.SANDBOX_PIDS = 64
    sandbox = selection.get_sandbox("bubblewrap")
    assert (sandbox.memory, sandbox.pids) == (256 << 20, 64)  # type: ignore[attr-defined]


def test_it_lists_every_backend_with_its_health() -> None:
    backends = selection.available_backends()
    assert set(backends) == {"docker", "bubblewrap", "none"}
    assert all(isinstance(ok, bool) and detail for ok, detail in backends.values())


def test_it_parses_sizes() -> None:
    assert parse_size("512m") == 512 << 20
    assert parse_size("1g") == 1 << 30
    assert parse_size("64k") == 64 << 10
    assert parse_size("1000") == 1000
    with pytest.raises(ValueError):
        parse_size("lots")


def test_it_normalises_the_cwd() -> None:
    assert normalize_cwd("/workspace/a/../b/") == "/workspace/b"
    assert normalize_cwd("sub") == "/workspace/sub"
    with pytest.raises(ValueError):
        normalize_cwd("/workspacex")


def test_it_names_containers_deterministically() -> None:
    assert container_name("conv-42", False) == "cc-sbx-conv-42-nonet"
    assert container_name("conv-42", True) == "cc-sbx-conv-42-net"
    odd = container_name("a/b c", False)
    assert odd == container_name("a/b c", False)
    assert odd != container_name("a-b-c", False)
    assert len(container_name("x" * 300, False)) < 64


def test_bubblewrap_tries_again_when_the_kernel_refuses_namespaces_for_a_moment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tools_app.sandbox import bwrap_backend

    busy = SandboxError(
        "bubblewrap could not set up the sandbox: bwrap: Creating new namespace failed: "
        "Resource temporarily unavailable"
    )
    attempts: list[int] = []

    def flaky(self: object, *args: object, **kwargs: object) -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise busy
        return "ran"

    monkeypatch.setattr(bwrap_backend.BubblewrapSandbox, "_exec_once", flaky)
    backend = object.__new__(bwrap_backend.BubblewrapSandbox)
    assert backend.exec("w", None, None) == "ran"  # type: ignore[arg-type]
    assert len(attempts) == 3

    attempts.clear()
    refused = SandboxError("bubblewrap could not set up the sandbox: Permission denied")
    monkeypatch.setattr(
        bwrap_backend.BubblewrapSandbox,
        "_exec_once",
        lambda *a, **k: attempts.append(1) or (_ for _ in ()).throw(refused),
    )
    with pytest.raises(SandboxError, match="Permission denied"):
        backend.exec("w", None, None)  # type: ignore[arg-type]
    assert len(attempts) == 1  # only the transient refusal is tried again
