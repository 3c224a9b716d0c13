"""A stdio MCP server's container is hardened exactly as the warm sandbox containers are: one
profile (tools_app/sandbox/hardening.py) makes both. Inspected on the real engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.tools.conftest import require_backend
from tests.tools.mcp.test_stdio_servers import add, run
from tools_app.runtime import workspace_dir_for
from tools_app.sandbox import ExecRequest, get_sandbox

pytestmark = [pytest.mark.docker]

SANDBOX_UID = 10001
HARDENING = (
    "CapDrop",
    "SecurityOpt",
    "ReadonlyRootfs",
    "Tmpfs",
    "Memory",
    "MemorySwap",
    "NanoCpus",
    "PidsLimit",
    "Ulimits",
    "Init",
    "Privileged",
    "NetworkMode",
)


def _server_container(user: Any, tool: str) -> dict[str, Any]:
    call = run(user, tool, {"timezone": "UTC"})
    assert call.status == "succeeded", call.result
    assert call.sandbox_id.startswith("docker:")
    # The session stays open after the call: its container is still there to inspect.
    return dict(get_sandbox("docker").api.inspect_container(call.sandbox_id[len("docker:") :]))  # type: ignore[attr-defined]


def _warm_container(workspace_id: str, network: bool) -> dict[str, Any]:
    sandbox = get_sandbox("docker")
    try:
        result = sandbox.exec(
            workspace_id, workspace_dir_for(workspace_id), ExecRequest(["true"], network=network)
        )
        assert result.exit_code == 0, result.stderr
        return dict(sandbox.api.inspect_container(result.sandbox_id))  # type: ignore[attr-defined]
    finally:
        sandbox.release(workspace_id)


def _hardening(info: dict[str, Any]) -> dict[str, Any]:
    host = info["HostConfig"]
    return {key: host.get(key) for key in HARDENING} | {"User": info["Config"]["User"]}


@pytest.mark.parametrize("network", [False, True], ids=["network-off", "network-on"])
def test_a_stdio_server_container_gets_the_warm_containers_hardening(
    network: bool, mcp_venv: Path, transactional_db: None, staff_user: Any, user: Any
) -> None:
    require_backend("docker")
    name = f"time-hardened-{'net' if network else 'nonet'}"
    source = add(name, "mcp-server-time", "docker", staff_user, network=network)
    assert source.state == "up", source.last_error
    tool = {f["remote"]: f["name"] for f in source.functions}["get_current_time"]

    server = _hardening(_server_container(user, tool))
    warm = _hardening(_warm_container(f"hardening-{name}", network))

    assert server == warm
    assert server["CapDrop"] == ["ALL"]
    assert server["SecurityOpt"] == ["no-new-privileges"]
    assert server["ReadonlyRootfs"] is True
    assert server["User"] == f"{SANDBOX_UID}:{SANDBOX_UID}"
    assert server["NetworkMode"] == ("cc-sandbox-net" if network else "none")
    assert server["PidsLimit"] and server["PidsLimit"] > 0
    assert server["Memory"] and server["Memory"] == server["MemorySwap"]
    assert server["Init"] is True
