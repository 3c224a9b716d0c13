"""The Docker tool's own containers (seed 003: "create an nginx container and check its
status"), against the real engine: off by default; images, ports and limits set by admins;
labels that keep container_stop / container_remove to what the tool created, for whom."""

from __future__ import annotations

import json
import socket
import subprocess
import urllib.request
import uuid

import pytest

from tests.helpers import require, wait_for
from tests.tools.docker.test_docker_tools import IMAGE, configure, docker_ok, run
from tools_app.executors.docker import managed

pytestmark = [pytest.mark.docker, pytest.mark.django_db(transaction=True)]

ALL_OPERATIONS = ["list", "inspect", "logs", "start", "stop", "create", "remove"]


def inspect(name: str) -> dict:
    out = subprocess.run(["docker", "inspect", name], capture_output=True, text=True)
    return json.loads(out.stdout)[0] if out.returncode == 0 else {}


@pytest.fixture(autouse=True)
def engine():
    require(docker_ok(), "no Docker engine")
    have = subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True)
    require(have.returncode == 0, f"image {IMAGE} missing (make sandbox-image)")
    yield
    remove_the_tools_containers()


def remove_the_tools_containers() -> None:
    # Only what this deployment's tool made (its label), never anything else on the engine.
    label = f"label={managed.LABEL}={managed.namespace()}"
    found = subprocess.run(
        ["docker", "ps", "-aq", "--filter", label], capture_output=True, text=True
    )
    if found.stdout.split():
        subprocess.run(["docker", "rm", "-f", *found.stdout.split()], capture_output=True)


@pytest.fixture
def network():
    name = f"cc-test-tools-{uuid.uuid4().hex[:6]}"
    subprocess.run(["docker", "network", "create", name], check=True, capture_output=True)
    yield name
    remove_the_tools_containers()  # a container still on the network would keep it
    subprocess.run(["docker", "network", "rm", name], capture_output=True)


def allow(**extra):
    configure(allowed_operations=ALL_OPERATIONS, allowed_images=[IMAGE], **extra)


def test_creating_containers_is_off_until_an_admin_allows_it(staff_user):
    call = run(staff_user, "container_run", {"image": IMAGE, "command": "sleep 60"})
    assert call.status == "denied"
    assert "docker operation 'create' is not allowed" in call.error
    configure(allowed_operations=ALL_OPERATIONS)  # images still unlisted
    call = run(staff_user, "container_run", {"image": IMAGE, "command": "sleep 60"})
    assert call.status == "denied" and "no image may be used" in call.error
    allow()
    other = run(staff_user, "container_run", {"image": "alpine:3.20", "command": "true"})
    assert other.status == "denied"
    assert other.error == f"policy: image 'alpine:3.20' is not allowed (allowed: {IMAGE})"


def test_it_runs_a_hardened_labelled_container_then_stops_and_removes_it(staff_user):
    allow(container_memory="64m", container_cpus=0.5, container_pids=32)
    name = f"web-{uuid.uuid4().hex[:6]}"
    ran = run(staff_user, "container_run", {"image": IMAGE, "name": name, "command": "sleep 300"})
    assert ran.status == "succeeded", ran.error
    assert ran.result["name"] == f"cctool-{name}" and ran.result["status"] == "running"
    info = inspect(f"cctool-{name}")
    host = info["HostConfig"]
    assert host["Memory"] == 64 << 20 and host["MemorySwap"] == 64 << 20
    assert host["NanoCpus"] == 500_000_000 and host["PidsLimit"] == 32
    assert host["CapDrop"] == ["ALL"] and not host["CapAdd"] and host["Privileged"] is False
    assert "no-new-privileges" in host["SecurityOpt"]
    assert not host["Binds"] and not info["Mounts"] and host["NetworkMode"] == "none"
    labels = info["Config"]["Labels"]
    assert labels[managed.LABEL] == managed.namespace()
    assert labels[managed.LABEL_USER] == str(staff_user.pk)
    assert labels[managed.LABEL_CALL] == str(ran.pk)

    stopped = run(staff_user, "container_stop", {"container_id": name})  # its own name works
    assert stopped.status == "succeeded", stopped.error
    assert inspect(f"cctool-{name}")["State"]["Status"] == "exited"
    removed = run(staff_user, "container_remove", {"container_id": f"cctool-{name}"})
    assert removed.status == "succeeded" and removed.result["removed"] is True
    assert inspect(f"cctool-{name}") == {}


def test_a_one_shot_run_returns_its_output_and_leaves_nothing(staff_user):
    allow()
    ran = run(
        staff_user,
        "container_run",
        {
            "image": IMAGE,
            "command": "sh -c 'echo hello from $GREETING'",
            "env": ["GREETING=a box"],
            "detach": False,
        },
    )
    assert ran.status == "succeeded", ran.error
    assert ran.result["exit_code"] == 0 and ran.result["removed"] is True
    assert "hello from a box" in ran.result["logs"]
    failed = run(
        staff_user, "container_run", {"image": IMAGE, "command": "sh -c 'exit 3'", "detach": False}
    )
    assert failed.status == "failed" and failed.error == "the container exited with status 3"
    label = f"label={managed.LABEL}={managed.namespace()}"
    left = subprocess.run(
        ["docker", "ps", "-aq", "--filter", label], capture_output=True, text=True
    )
    assert left.stdout.split() == []


def test_ports_are_published_only_inside_the_admins_ranges(staff_user, network):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    allow(allowed_ports=[str(port)])
    refused = run(staff_user, "container_run", {"image": IMAGE, "ports": [f"{port}:80"]})
    assert refused.status == "denied" and "publishing ports needs a network" in refused.error
    allow(allowed_ports=[str(port)], container_network=network)
    outside = run(staff_user, "container_run", {"image": IMAGE, "ports": [f"{port + 1}:80"]})
    assert outside.status == "denied"
    assert outside.error == f"policy: host port {port + 1} is not allowed (allowed: {port})"
    served = run(
        staff_user,
        "container_run",
        {"image": IMAGE, "command": "httpd -f -p 80 -h /etc", "ports": [f"{port}:80"]},
    )
    assert served.status == "succeeded", served.error
    assert served.result["ports"] == {"80/tcp": [f"127.0.0.1:{port}"]}

    def answer() -> str | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/hostname", timeout=2) as r:
                return r.read().decode()
        except OSError:
            return None

    assert wait_for(answer, timeout=10, message="the published port to answer")


def test_stop_and_remove_reach_only_the_tools_own_containers(staff_user, user, other_user):
    # A container someone else made, even named like the tool's, or labelled for another
    # deployment: container_stop / container_remove refuse it, saying so.
    foreign = f"cctool-foreign-{uuid.uuid4().hex[:6]}"
    forged = f"cctool-forged-{uuid.uuid4().hex[:6]}"
    for name, labels in (
        (foreign, []),
        (forged, ["--label", f"{managed.LABEL}=another-deployment"]),
    ):
        subprocess.run(
            [
                "docker",
                "run",
                "-d",
                "--name",
                name,
                "--network",
                "none",
                *labels,
                IMAGE,
                "sleep",
                "60",
            ],
            check=True,
            capture_output=True,
        )
    try:
        allow(staff_only=False)
        for name in (foreign, forged, foreign.removeprefix("cctool-")):
            for tool in ("container_stop", "container_remove"):
                call = run(
                    staff_user,
                    tool,
                    {"container_id": name, "force": True}
                    if tool == "container_remove"
                    else {"container_id": name},
                )
                assert call.status == "denied", (tool, name, call.result)
                assert "is not a container the Docker tool created for you" in call.error
            assert inspect(foreign)["State"]["Running"] is True
        # One user's container is not another's to stop (IDOR), an admin's to manage.
        mine = run(user, "container_run", {"image": IMAGE, "command": "sleep 60"})
        assert mine.status == "succeeded", mine.error
        theirs = run(other_user, "container_stop", {"container_id": mine.result["name"]})
        assert theirs.status == "denied"
        assert inspect(mine.result["name"])["State"]["Running"] is True
        by_admin = run(
            staff_user, "container_remove", {"container_id": mine.result["name"], "force": True}
        )
        assert by_admin.status == "succeeded", by_admin.error
    finally:
        subprocess.run(["docker", "rm", "-f", foreign, forged], capture_output=True)


def test_the_number_of_containers_is_capped(staff_user):
    allow(max_containers=1)
    first = run(staff_user, "container_create", {"image": IMAGE, "command": "sleep 60"})
    assert first.status == "succeeded" and first.result["status"] == "created"
    second = run(staff_user, "container_create", {"image": IMAGE, "command": "sleep 60"})
    assert second.status == "denied" and "(the limit)" in second.error
    running = run(staff_user, "container_remove", {"container_id": first.result["name"]})
    assert running.status == "succeeded", running.error  # created, not running: no force needed
    assert run(staff_user, "container_create", {"image": IMAGE}).status == "succeeded"


def test_arguments_that_would_reach_the_host_are_refused(staff_user):
    from pydantic import ValidationError

    from tools_app.executors.docker.settings import DockerSettings

    allow()
    for extra in ({"volumes": ["/:/host"]}, {"privileged": True}, {"network_mode": "host"}):
        call = run(staff_user, "container_run", {"image": IMAGE, **extra})
        assert call.status == "failed" and "is not an argument of container_run" in call.error, (
            extra
        )
    bad_env = run(staff_user, "container_run", {"image": IMAGE, "env": ["LD_PRELOAD"]})
    assert bad_env.status == "denied" and "NAME=value" in bad_env.error
    for settings in (
        {"container_network": "host"},
        {"container_capabilities": ["SYS_ADMIN"]},
        {"allowed_ports": ["0-70000"]},
    ):
        with pytest.raises(ValidationError):
            DockerSettings.model_validate(settings)
