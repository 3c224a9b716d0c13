"""Docker backend: warm containers, reuse across workers, recreation, release, reaping,
hardening, and clear errors when the engine or image is missing."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest
from django.conf import settings

from tests.sandbox.conftest import IMAGE, TEST_LABEL, Box
from tools_app.sandbox.base import ExecRequest, SandboxError
from tools_app.sandbox.docker_backend import DockerSandbox
from tools_app.sandbox.docker_containers import container_name

pytestmark = pytest.mark.docker


def _inspect(box: Box, cid: str) -> dict:
    return box.sandbox.api.inspect_container(cid)  # type: ignore[attr-defined]


def test_it_reuses_the_warm_container(docker_box: Box) -> None:
    first = docker_box.run("touch", "/tmp/warm")
    second = docker_box.run("ls", "/tmp/warm")
    assert first.sandbox_id == second.sandbox_id
    assert second.exit_code == 0, "tmpfs state survives between calls in the same container"
    info = _inspect(docker_box, first.sandbox_id)
    namespace = docker_box.sandbox.pool.namespace  # type: ignore[attr-defined]
    assert info["Name"] == "/" + container_name(docker_box.workspace_id, False, namespace)
    assert info["Config"]["Labels"]["controlcenter.workspace"] == docker_box.workspace_id


def test_it_shares_the_container_with_another_worker(docker_box: Box) -> None:
    first = docker_box.run("true")
    other_worker = DockerSandbox(image=IMAGE, pool_label=TEST_LABEL)
    second = other_worker.exec(docker_box.workspace_id, docker_box.dir, ExecRequest(["true"]))
    assert second.sandbox_id == first.sandbox_id


def test_it_survives_a_create_race(docker_box: Box) -> None:
    # Four "workers" create the same container at once: all must end up in the same one.
    workers = [DockerSandbox(image=IMAGE, pool_label=TEST_LABEL) for _ in range(4)]
    ids: list[str] = []
    errors: list[BaseException] = []
    req = ExecRequest(["true"])

    def call(worker: DockerSandbox) -> None:
        try:
            ids.append(worker.exec(docker_box.workspace_id, docker_box.dir, req).sandbox_id)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    assert len(ids) == 4 and len(set(ids)) == 1


def test_it_recreates_a_container_removed_externally(docker_box: Box) -> None:
    first = docker_box.run("true")
    docker_box.sandbox.api.remove_container(first.sandbox_id, force=True)  # type: ignore[attr-defined]
    second = docker_box.run("echo", "back")
    assert second.stdout == "back\n"
    assert second.sandbox_id != first.sandbox_id


def test_a_workspace_deleted_and_made_again_gets_a_fresh_container(docker_box: Box) -> None:
    # The old container's bind mount still holds the deleted directory: it must not serve
    # the new one at the same path.
    first = docker_box.run("sh", "-c", "echo old > /workspace/a.txt")
    shutil.rmtree(docker_box.dir)
    docker_box.dir.mkdir()
    second = docker_box.run("sh", "-c", "ls /workspace; echo new > /workspace/b.txt")
    assert second.sandbox_id != first.sandbox_id
    assert second.stdout == ""
    assert (docker_box.dir / "b.txt").read_text() == "new\n"


def test_it_recreates_a_container_that_stopped(docker_box: Box) -> None:
    first = docker_box.run("true")
    docker_box.sandbox.api.kill(first.sandbox_id)  # type: ignore[attr-defined]
    assert docker_box.run("echo", "back").stdout == "back\n"


def test_it_keeps_a_separate_container_for_network_access(docker_box: Box) -> None:
    off = docker_box.run("true")
    on = docker_box.run("true", network=True)
    assert on.sandbox_id != off.sandbox_id
    assert _inspect(docker_box, off.sandbox_id)["HostConfig"]["NetworkMode"] == "none"
    assert _inspect(docker_box, on.sandbox_id)["HostConfig"]["NetworkMode"] == "cc-sandbox-net"


def test_it_releases_a_workspace(docker_box: Box) -> None:
    off = docker_box.run("true")
    on = docker_box.run("true", network=True)
    docker_box.sandbox.release(docker_box.workspace_id)
    api = docker_box.sandbox.api  # type: ignore[attr-defined]
    for cid in (off.sandbox_id, on.sandbox_id):
        with pytest.raises(Exception, match="No such container"):
            api.inspect_container(cid)
    assert docker_box.run("echo", "again").stdout == "again\n"


def test_it_reaps_idle_containers_but_not_busy_ones(docker_box: Box) -> None:
    # A pool with its own label, so reaping cannot touch the other tests' containers.
    pool = DockerSandbox(image=IMAGE, pool_label=f"{TEST_LABEL}-reap")
    idle = Box(pool, docker_box.workspace_id + "-idle", docker_box.dir.with_name("idle"))
    busy = Box(pool, docker_box.workspace_id + "-busy", docker_box.dir.with_name("busy"))
    idle_id = idle.run("true").sandbox_id
    busy.run("true")
    assert pool.reap_idle(3600) == 0
    time.sleep(1.2)
    worker = threading.Thread(target=lambda: busy.sh("sleep 2"))
    worker.start()
    time.sleep(0.5)
    try:
        assert pool.reap_idle(1.0) == 1, "only the idle container goes; the busy one is running"
    finally:
        worker.join()
        pool.release(busy.workspace_id)
    with pytest.raises(Exception, match="No such container"):
        pool.api.inspect_container(idle_id)
    assert idle.run("echo", "ok").stdout == "ok\n"
    pool.release(idle.workspace_id)


def test_it_hardens_the_container(docker_box: Box) -> None:
    info = _inspect(docker_box, docker_box.run("true").sandbox_id)
    host = info["HostConfig"]
    assert info["Config"]["User"] == f"{settings.SANDBOX_UID}:{settings.SANDBOX_UID}"
    assert host["CapDrop"] == ["ALL"]
    assert host["SecurityOpt"] == ["no-new-privileges"]
    assert host["ReadonlyRootfs"] is True
    assert host["Privileged"] is False
    assert host["NetworkMode"] == "none"
    assert host["Memory"] == 512 * 1024 * 1024
    assert host["MemorySwap"] == host["Memory"]
    assert host["PidsLimit"] == 128
    assert host["NanoCpus"] == 1_000_000_000
    assert "/tmp" in host["Tmpfs"]
    assert {u["Name"] for u in host["Ulimits"]} == {"nofile", "nproc"}
    mounts = {m["Destination"]: m for m in info["Mounts"]}
    assert set(mounts) == {"/workspace"}
    assert mounts["/workspace"]["Source"] == str(docker_box.dir.resolve())
    assert mounts["/workspace"]["RW"] is True
    assert not host.get("Binds"), "nothing else from the host, no docker socket"


def test_it_says_when_the_image_is_missing(docker_box: Box, tmp_path: Path) -> None:
    sandbox = DockerSandbox(image="controlcenter-sandbox-missing:none", pool_label=TEST_LABEL)
    ok, detail = sandbox.health()
    assert not ok
    assert "missing — run `make sandbox-image`" in detail
    with pytest.raises(SandboxError, match="missing — run `make sandbox-image`"):
        sandbox.exec("missing-image", tmp_path, ExecRequest(["true"]))


def test_it_says_when_the_engine_is_unreachable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    sandbox = DockerSandbox()
    ok, detail = sandbox.health()
    assert not ok
    assert detail.startswith("Docker engine not reachable at unix:///nonexistent/docker.sock")
    with pytest.raises(SandboxError, match="Docker engine not reachable"):
        sandbox.exec("nowhere", tmp_path, ExecRequest(["true"]))
