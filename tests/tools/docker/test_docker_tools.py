"""The Docker tool against the real engine: staff only and read-only by default, allowlisted
containers, sandbox containers out of reach unless named, environment values redacted."""

from __future__ import annotations

import json
import subprocess
import uuid

import pytest

from tests.helpers import require, wait_for
from tools_app.models import ToolCall, ToolGroupConfig
from tools_app.runtime import BindContext
from tools_app.services.binding import CallRequest, toolcall_bind
from tools_app.services.execution import toolcall_execute

IMAGE = "controlcenter-sandbox-mini:latest"
PASSWORD = "hunter2-in-the-env"


def docker_ok() -> bool:
    return subprocess.run(["docker", "info"], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def web_container():
    require(docker_ok(), "no Docker engine")
    have = subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True)
    require(have.returncode == 0, f"image {IMAGE} missing (make sandbox-image)")
    name = f"cc-test-web-{uuid.uuid4().hex[:6]}"
    subprocess.run(
        [
            "docker",
            "run",
            "-d",
            "--name",
            name,
            "--network",
            "none",
            "--label",
            "app=web",
            "--env",
            f"DB_PASSWORD={PASSWORD}",
            IMAGE,
            "sh",
            "-c",
            "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.1; done",
        ],
        check=True,
        capture_output=True,
    )
    yield name
    subprocess.run(["docker", "rm", "-f", name], capture_output=True)


@pytest.fixture
def sandbox_like():
    name = f"cc-sbx-test-{uuid.uuid4().hex[:6]}"
    subprocess.run(
        [
            "docker",
            "run",
            "-d",
            "--name",
            name,
            "--network",
            "none",
            "--label",
            "controlcenter.sandbox=1",
            IMAGE,
            "sleep",
            "300",
        ],
        check=True,
        capture_output=True,
    )
    yield name
    subprocess.run(["docker", "rm", "-f", name], capture_output=True)


def configure(**settings):
    ToolGroupConfig.objects.update_or_create(name="docker", defaults={"settings": settings})


def run(user, tool, args):
    call = toolcall_bind(
        request=CallRequest(tool=tool, arguments=args),
        ctx=BindContext(user_id=user.pk, conversation_id=None, source="api"),
    )
    if call.status == ToolCall.Status.QUEUED:
        toolcall_execute(tool_call_id=call.pk)
        call.refresh_from_db()
    return call


def test_it_lists_inspects_and_reads_logs(staff_user, web_container):
    listed = run(staff_user, "docker_list_containers", {"name": web_container})
    assert listed.status == "succeeded", listed.error
    [row] = listed.result["containers"]
    assert row["name"] == web_container and row["status"] == "running"
    inspected = run(staff_user, "docker_inspect", {"container_id": web_container})
    assert inspected.result["state"]["Running"] is True
    assert inspected.result["labels"]["app"] == "web"
    wait_for(
        lambda: (
            "tick 5"
            in subprocess.run(
                ["docker", "logs", web_container], capture_output=True, text=True
            ).stdout
        )
    )
    logs = run(staff_user, "docker_logs", {"container_id": web_container, "tail": 3})
    assert logs.status == "succeeded"
    assert logs.result["logs"].count("tick") == 3


def test_it_is_for_staff_only_until_an_admin_opens_it(user, web_container):
    refused = run(user, "docker_list_containers", {"name": web_container})
    assert refused.status == "denied"
    assert refused.error == (
        "policy: the Docker tool is for admins only (an admin can open it to everyone in the "
        "Tools Manager)"
    )
    configure(staff_only=False)
    listed = run(user, "docker_list_containers", {"name": web_container})
    assert listed.status == "succeeded", listed.error
    inspected = run(user, "docker_inspect", {"container_id": web_container})
    assert inspected.result["env"]["DB_PASSWORD"] == "[redacted]"
    assert PASSWORD not in json.dumps(inspected.result) + inspected.output


def test_inspect_shows_environment_values_only_when_an_admin_allows_it(staff_user, web_container):
    inspected = run(staff_user, "docker_inspect", {"container_id": web_container})
    assert inspected.result["env"]["DB_PASSWORD"] == "[redacted]"
    assert "PATH" in inspected.result["env"]  # the image's own variables: names kept
    assert PASSWORD not in json.dumps(inspected.result) + inspected.output
    configure(show_env=True)
    inspected = run(staff_user, "docker_inspect", {"container_id": web_container})
    assert inspected.result["env"]["DB_PASSWORD"] == PASSWORD


def test_exec_is_refused_until_an_admin_allows_it(staff_user, web_container):
    refused = run(staff_user, "docker_exec", {"container_id": web_container, "command": "hostname"})
    assert refused.status == "denied"
    assert "docker operation 'exec' is not allowed" in refused.error
    configure(allowed_operations=["list", "inspect", "logs", "exec"])
    allowed = run(
        staff_user, "docker_exec", {"container_id": web_container, "command": "echo 'a b'"}
    )
    assert allowed.status == "succeeded", allowed.error
    assert allowed.result["stdout"] == "a b\n"
    assert allowed.result["argv"] == ["echo", "a b"]  # split like a shell, run without one
    failed = run(staff_user, "docker_exec", {"container_id": web_container, "command": "false"})
    assert failed.status == "failed" and failed.result["exit_code"] == 1


def test_containers_outside_the_allowlist_are_invisible(staff_user, web_container):
    configure(allowed_containers=["db-*"])
    listed = run(staff_user, "docker_list_containers", {"all": True})
    assert web_container not in [r["name"] for r in listed.result["containers"]]
    denied = run(staff_user, "docker_inspect", {"container_id": web_container})
    assert denied.status == "denied" and "not in the allowed containers" in denied.error
    configure(allowed_containers=["label:app=web"])
    assert run(staff_user, "docker_inspect", {"container_id": web_container}).status == "succeeded"


def test_sandbox_containers_are_out_of_reach_unless_named(staff_user, sandbox_like):
    listed = run(staff_user, "docker_list_containers", {"all": True})
    assert sandbox_like not in [r["name"] for r in listed.result["containers"]]
    assert run(staff_user, "docker_logs", {"container_id": sandbox_like}).status == "denied"
    configure(allowed_containers=["cc-sbx-*"])  # a glob is not enough
    assert run(staff_user, "docker_inspect", {"container_id": sandbox_like}).status == "denied"
    configure(allowed_containers=[sandbox_like])
    assert run(staff_user, "docker_inspect", {"container_id": sandbox_like}).status == "succeeded"


def test_lifecycle_operations_need_their_permission(staff_user, web_container):
    assert run(staff_user, "docker_restart", {"container_id": web_container}).status == "denied"
    configure(allowed_operations=["inspect", "restart"])
    restarted = run(staff_user, "docker_restart", {"container_id": web_container})
    assert restarted.status == "succeeded", restarted.error
    assert restarted.result["status"] == "running"


def test_an_unreachable_engine_is_a_clear_error(staff_user, tmp_path):
    configure(engine=str(tmp_path / "nope.sock"))
    call = run(staff_user, "docker_list_containers", {})
    assert call.status == "failed"
    assert "cannot reach the Docker engine at unix://" in call.error


def test_unknown_containers_are_reported(staff_user):
    call = run(staff_user, "docker_inspect", {"container_id": "definitely-not-here"})
    assert call.status == "failed" and "no container named" in call.error
