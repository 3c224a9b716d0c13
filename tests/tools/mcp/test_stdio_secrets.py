"""Secret environment variables of a stdio MCP server (issue 35): a real server built with the
official SDK (env_server.py), in the docker and bubblewrap sandboxes, called through the
binding, gets its secret and plain variables; a changed secret restarts its session; the
launcher's file is gone once it runs; the ``none`` backend refuses secrets.
(The attacks - where the value must never appear - are in tests/security/test_stdio_secrets.py.)"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.tools.conftest import ISOLATED, require_backend
from tests.tools.mcp.test_stdio_servers import run
from tools_app.executors.mcp.services import mcp_refresh, mcp_server_add, mcp_server_env_set
from tools_app.models import ToolCall, ToolSource
from tools_app.services.source_env import EnvChange
from tools_app.services.sources import SourceError

SECRET = "ghp_probe-SECRET-value-0d1f'quote\"and space"


def sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def answer(call: ToolCall) -> Any:
    assert call.status == "succeeded", (call.error, call.result)
    structured = call.result.get("structured")
    if isinstance(structured, dict) and set(structured) == {"result"}:
        return structured["result"]
    return structured if structured is not None else json.loads(call.result["text"])


def add_probe(
    name: str, command: str, backend: str, user: Any, env: EnvChange, **settings: Any
) -> ToolSource:
    source = mcp_server_add(
        name=name,
        command=command,
        settings={"sandbox_backend": backend, **settings},
        env=env,
        user=user,
    )
    mcp_refresh(source)
    source.refresh_from_db()
    assert source.state == "up", source.last_error
    return source


def tools_of(source: ToolSource) -> dict[str, str]:
    return {f["remote"]: f["name"] for f in source.functions}


@pytest.mark.parametrize("backend", ISOLATED)
def test_the_server_gets_its_secret_and_plain_variables(
    backend: str, env_server: str, transactional_db: None, staff_user: Any, user: Any
) -> None:
    require_backend(backend)
    source = add_probe(
        f"env-{backend}",
        env_server,
        backend,
        staff_user,
        EnvChange(secret={"PROBE_API_KEY": SECRET}, plain={"PROBE_REGION": "eu-west-1"}),
    )
    tools = tools_of(source)

    check = answer(
        run(user, tools["secret_check"], {"name": "PROBE_API_KEY", "sha256": sha(SECRET)})
    )
    assert check == {"present": True, "matches": True}
    region = {"name": "PROBE_REGION", "sha256": sha("eu-west-1")}
    assert answer(run(user, tools["secret_check"], region)) == {"present": True, "matches": True}
    names = answer(run(user, tools["env_names"], {}))["names"]
    # The clean environment, plus the server's own variables; nothing of the worker's.
    assert {"PROBE_API_KEY", "PROBE_REGION", "PATH", "HOME"} <= set(names)
    assert not {"DJANGO_SETTINGS_MODULE", "SECRET_KEY", "DATABASE_URL", "CC_VAR_DIR"} & set(names)
    # The launcher's file was removed before the server started.
    for path in ("/tmp/.cc-env", "/tmp/.cc-env.part", "/run/cc-env/env"):
        assert answer(run(user, tools["path_exists"], {"path": path})) == {"exists": False}


@pytest.mark.parametrize("backend", ISOLATED)
def test_a_changed_secret_restarts_the_session(
    backend: str, env_server: str, transactional_db: None, staff_user: Any, user: Any
) -> None:
    require_backend(backend)
    source = add_probe(
        f"env-change-{backend}",
        env_server,
        backend,
        staff_user,
        EnvChange(secret={"PROBE_TOKEN": "first-token"}),
    )
    check = tools_of(source)["secret_check"]
    first = run(user, check, {"name": "PROBE_TOKEN", "sha256": sha("first-token")})
    assert answer(first) == {"present": True, "matches": True}

    mcp_server_env_set(source, change=EnvChange(secret={"PROBE_TOKEN": "second"}), user=staff_user)
    # The environment is read once, at start: the new value proves a new process.
    second = run(user, check, {"name": "PROBE_TOKEN", "sha256": sha("second")})
    assert answer(second) == {"present": True, "matches": True}
    if backend == "docker":
        assert second.sandbox_id != first.sandbox_id  # a new container

    mcp_server_env_set(source, change=EnvChange(remove={"PROBE_TOKEN"}), user=staff_user)
    gone = run(user, check, {"name": "PROBE_TOKEN", "sha256": sha("second")})
    assert answer(gone) == {"present": False, "matches": False}


def test_the_none_backend_refuses_to_start_a_server_with_secrets(
    env_server: str, transactional_db: None, staff_user: Any
) -> None:
    source = mcp_server_add(
        name="env-none",
        command=env_server,
        settings={"sandbox_backend": "none"},
        env=EnvChange(secret={"PROBE_API_KEY": SECRET}),
        user=staff_user,
    )
    with pytest.raises(SourceError, match="needs an isolating sandbox"):
        mcp_refresh(source)
    source.refresh_from_db()
    assert source.state == "down" and "isolating sandbox" in source.last_error
    assert SECRET not in source.last_error


def test_variables_are_for_stdio_servers_only(transactional_db: None, staff_user: Any) -> None:
    with pytest.raises(SourceError, match="for stdio servers"):
        mcp_server_add(
            name="env-http",
            url="http://127.0.0.1:9/mcp",
            allow_private=True,
            env=EnvChange(secret={"API_KEY": "x"}),
            user=staff_user,
        )


def test_a_refused_name_is_refused_with_the_reason(transactional_db: None, staff_user: Any) -> None:
    for name, why in [
        ("PATH", "decides which program runs"),
        ("LD_PRELOAD", "dynamic loader"),
        ("LD_LIBRARY_PATH", "dynamic loader"),
        ("PYTHONPATH", "interpreter"),
        ("PYTHONHOME", "interpreter"),
        ("NODE_OPTIONS", "interpreter"),
        ("BASH_ENV", "shell"),
        ("GIT_SSH_COMMAND", "another command"),
        ("1TOKEN", "not an environment variable name"),
        ("API-KEY", "not an environment variable name"),
    ]:
        with pytest.raises(SourceError, match=why):
            mcp_server_add(
                name="env-refused",
                command="mcp-server-time",
                env=EnvChange(secret={name: "x"}),
                user=staff_user,
            )
    assert not ToolSource.objects.filter(name="env-refused").exists()


def test_the_digest_changes_with_a_secret_and_does_not_contain_it(
    transactional_db: None, staff_user: Any, settings: Any, tmp_path: Path
) -> None:
    from tools_app.executors.mcp.services import server_spec

    source = mcp_server_add(
        name="env-digest",
        command="mcp-server-time",
        env=EnvChange(secret={"API_KEY": "digest-secret-1"}),
        user=staff_user,
    )
    one = server_spec(source)
    source = mcp_server_env_set(
        source, change=EnvChange(secret={"API_KEY": "digest-secret-2"}), user=None
    )
    two = server_spec(source)
    assert one.key[1] != two.key[1]
    assert "digest-secret-1" not in repr(one) and "digest-secret-2" not in repr(two)
    assert dict(two.secret_env) == {"API_KEY": "digest-secret-2"}
