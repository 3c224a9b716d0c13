"""Real MCP servers from the package index (mcp-server-time, mcp-server-git) over stdio,
inside the sandbox (Docker and bubblewrap), with the attack tests that belong to them."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.tools.conftest import ISOLATED, require_backend
from tests.tools.mcp.conftest import wait_call
from tools_app.executors.mcp.services import mcp_refresh, mcp_server_add, shared_workspace_id
from tools_app.models import ToolCall
from tools_app.runtime import BindContext, workspace_dir_for
from tools_app.services.binding import CallRequest, toolcall_bind, toolcall_dispatch
from tools_app.services.execution import toolcall_execute

SANDBOX_UID = 10001


def run(user: Any, tool: str, arguments: dict[str, Any]) -> ToolCall:
    call = toolcall_bind(
        request=CallRequest(tool=tool, arguments=arguments),
        ctx=BindContext(user_id=user.pk, conversation_id=None, source="api"),
    )
    if call.status == ToolCall.Status.QUEUED:
        toolcall_execute(tool_call_id=call.pk)
    call.refresh_from_db()
    return call


def add(name: str, command: str, backend: str, user: Any, **settings: Any) -> Any:
    source = mcp_server_add(
        name=name, command=command, settings={"sandbox_backend": backend, **settings}, user=user
    )
    mcp_refresh(source)
    source.refresh_from_db()
    return source


@pytest.mark.parametrize("backend", ISOLATED)
def test_mcp_server_time_runs_in_the_sandbox(
    backend: str, mcp_venv: Path, transactional_db: None, staff_user: Any, user: Any
) -> None:
    require_backend(backend)
    source = add("time", "mcp-server-time --local-timezone UTC", backend, staff_user)
    assert source.state == "up", source.last_error
    assert {f["name"] for f in source.functions} == {"get_current_time", "convert_time"}
    call = run(user, "get_current_time", {"timezone": "Europe/Berlin"})
    assert call.status == "succeeded", call.result
    assert call.result["structured"]["timezone"] == "Europe/Berlin"
    assert call.sandbox_id.startswith("docker:" if backend == "docker" else "bwrap")
    converted = run(
        user,
        "convert_time",
        {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
    )
    assert converted.status == "succeeded", converted.result
    assert "21:00" in converted.result["text"]


def _repo(workspace: Path) -> Path:
    repo = workspace / "repo"
    shutil.rmtree(repo, ignore_errors=True)  # left by an earlier run, owned by the sandbox
    repo.mkdir(parents=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org")
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "hello.txt").write_text("hello\n")
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "first"], check=True, env=env)
    (repo / "hello.txt").write_text("hello again\n")
    if os.geteuid() == 0:  # git refuses repositories owned by someone else
        subprocess.run(["chown", "-R", f"{SANDBOX_UID}:{SANDBOX_UID}", str(repo)], check=True)
    return repo


@pytest.mark.parametrize("backend", ISOLATED)
def test_mcp_server_git_works_on_the_shared_workspace(
    backend: str, mcp_venv: Path, transactional_db: None, staff_user: Any, user: Any
) -> None:
    require_backend(backend)
    workspace = workspace_dir_for(shared_workspace_id(f"git-{backend}"))
    _repo(workspace)
    source = add(f"git-{backend}", "mcp-server-git", backend, staff_user)
    names = {f["remote"]: f["name"] for f in source.functions}
    # The Dev group has its own git_status: the server's is prefixed with the server's name.
    assert names["git_status"] == f"git_{backend}_git_status"
    assert names["git_create_branch"] == "git_create_branch"  # no clash: no prefix
    status = run(user, names["git_status"], {"repo_path": "/workspace/repo"})
    assert status.status == "succeeded", status.result
    assert "hello.txt" in status.result["text"]
    log = run(user, names["git_log"], {"repo_path": "/workspace/repo", "max_count": 1})
    assert log.status == "succeeded" and "first" in log.result["text"]


@pytest.mark.parametrize("backend", ISOLATED)
def test_a_sandboxed_server_cannot_reach_host_repositories(
    backend: str, mcp_venv: Path, transactional_db: None, staff_user: Any, user: Any
) -> None:
    require_backend(backend)
    source = add(f"git-attack-{backend}", "mcp-server-git", backend, staff_user)
    git_status = {f["remote"]: f["name"] for f in source.functions}["git_status"]
    # The project's own checkout is a git repository on the host, outside the sandbox.
    call = run(user, git_status, {"repo_path": str(ROOT)})
    assert call.status == "failed", call.result
    escape = run(user, git_status, {"repo_path": "/workspace/../../etc"})
    assert escape.status == "failed"


@pytest.mark.parametrize("backend", ISOLATED)
def test_the_servers_venv_is_read_only_and_the_network_is_off(
    backend: str, mcp_venv: Path, transactional_db: None, staff_user: Any, user: Any
) -> None:
    """A server runs as the sandbox's uid, cannot write the servers' venv mounted into its
    sandbox, and has no network unless the group allows it."""
    require_backend(backend)
    from tools_app.executors.mcp.launch import ServerSpec, stdio_spawn
    from tools_app.executors.mcp.settings import McpSettings

    workspace_id = shared_workspace_id(f"probe-{backend}")
    # The launcher every stdio server goes through, with a probe instead of a server.
    spec = ServerSpec(
        name=f"probe-{backend}",
        revision=1,
        transport="stdio",
        command=(
            "sh",
            "-c",
            f"touch {mcp_venv.resolve()}/x 2>&1; id -u; "
            "python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 53), 2)' 2>&1 "
            "| tail -1",
        ),
        settings=McpSettings(sandbox_backend=backend),
        workspace_id=workspace_id,
        workspace_dir=str(workspace_dir_for(workspace_id)),
    )
    spawned = stdio_spawn(spec)
    try:
        done = subprocess.run(
            spawned.argv,
            env=spawned.env,
            cwd=spawned.cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        spawned.close()
    out = done.stdout + done.stderr
    assert "Read-only file system" in out
    assert str(SANDBOX_UID) in out
    assert "Network is unreachable" in out or "unreachable" in out.lower()


@pytest.mark.modes
def test_a_worker_runs_a_stdio_server_and_reuses_its_session(
    mcp_venv: Path, transactional_db: None, staff_user: Any, user: Any, worker: str
) -> None:
    require_backend("bubblewrap")
    add("time-worker", "mcp-server-time", "bubblewrap", staff_user)
    sandboxes = set()
    for _ in range(3):
        call = toolcall_bind(
            request=CallRequest(tool="get_current_time", arguments={"timezone": "UTC"}),
            ctx=BindContext(user_id=user.pk, conversation_id=None, source="api"),
        )
        toolcall_dispatch(call)
        done = wait_call(call.pk, timeout=60)
        assert done.status == "succeeded", done.result
        sandboxes.add(done.sandbox_id)
    assert len(sandboxes) <= 4  # one server per worker process, not one per call
