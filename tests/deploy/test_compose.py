"""docker-compose.yml: valid for the installed docker-compose, and shaped for a fleet on one
host (a balancer in front of scalable web replicas, health checks, migrations once, grace periods
that let tool calls finish, one SECRET_KEY and one workspace directory for every process)."""

from __future__ import annotations

import os
import subprocess
import tempfile
from typing import Any

import pytest
import yaml

from tests.deploy.support import ROOT, duration_seconds, longest_tool_timeout, tool_path
from tests.helpers import require

COMPOSE_FILE = ROOT / "docker-compose.yml"
APP = {"web", "runner", "worker", "browser-worker", "beat"}  # long-running app processes
SERVICES = APP | {"migrate", "lb", "redis", "postgres"}
KEY = "a-test-key-that-is-long-and-random-enough-0123456789"


def _compose(*args: str, secret_key: str | None = KEY) -> subprocess.CompletedProcess[str]:
    exe = tool_path("docker-compose")
    require(exe is not None, "docker-compose is not installed (apt-get install docker-compose)")
    assert exe is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SECRET_KEY", "LB_"))}
    env.pop("WORKSPACES_DIR", None)
    if secret_key is not None:
        env["SECRET_KEY"] = secret_key
    # An empty env file: a developer's .env must not decide what this test sees.
    with tempfile.NamedTemporaryFile("w", suffix=".env") as env_file:
        return subprocess.run(
            [
                *(exe, "--env-file", env_file.name, "-f", str(COMPOSE_FILE)),
                *("--project-directory", str(ROOT), *args),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )


@pytest.fixture(scope="module")
def config() -> dict[str, Any]:
    quiet = _compose("config", "-q")
    assert quiet.returncode == 0, quiet.stderr
    full = _compose("config")
    assert full.returncode == 0, full.stderr
    return yaml.safe_load(full.stdout)


def test_the_file_validates_and_has_every_service(config: dict[str, Any]) -> None:
    assert set(config["services"]) == SERVICES


def test_only_the_balancer_publishes_a_port_so_web_scales(config: dict[str, Any]) -> None:
    services = config["services"]
    for name, service in services.items():
        if name != "lb":
            assert not service.get("ports"), f"{name} publishes {service['ports']}"
        assert "container_name" not in service, f"{name} has a fixed container name"
    assert "8000" in [str(p) for p in services["web"].get("expose", [])]
    published = services["lb"]["ports"]
    assert len(published) == 1
    port = published[0]
    target = port["target"] if isinstance(port, dict) else port.rsplit(":", 1)[-1]
    assert str(target) == "8000"


def test_every_long_running_service_has_a_health_check(config: dict[str, Any]) -> None:
    services = config["services"]
    for name in SERVICES - {"migrate"}:
        check = services[name].get("healthcheck")
        assert check and check.get("test") and not check.get("disable"), name
    web_check = " ".join(services["web"]["healthcheck"]["test"])
    assert "/healthz/ready" in web_check or "/healthz/live" in web_check
    for kind in ("runner", "worker", "browser-worker", "beat"):
        test = services[kind]["healthcheck"]["test"]
        assert test[-4:] == ["manage.py", "health", "--kind", kind], test


def test_migrations_run_once_before_every_app_process(config: dict[str, Any]) -> None:
    services = config["services"]
    migrate = services["migrate"]
    assert migrate.get("restart") in ("no", None)
    assert "manage.py migrate --noinput" in " ".join(migrate["command"])
    for name in APP:
        command = services[name]["command"]
        assert "migrate" not in " ".join(command if isinstance(command, list) else [command])
        depends = services[name]["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully", name
        assert depends["postgres"]["condition"] == "service_healthy", name
        assert depends["redis"]["condition"] == "service_healthy", name


def test_workers_get_a_grace_period_as_long_as_the_longest_tool_timeout(
    config: dict[str, Any],
) -> None:
    longest = longest_tool_timeout()
    assert longest >= 600  # the bound this test is about is not a trivial one
    services = config["services"]
    for name in ("worker", "browser-worker"):
        assert duration_seconds(services[name]["stop_grace_period"]) >= longest, name
    for name in SERVICES - {"migrate"}:
        assert "stop_grace_period" in services[name], name


def test_every_process_gets_the_same_secret_key_and_sees_the_same_workspaces(
    config: dict[str, Any],
) -> None:
    services = config["services"]
    workspaces = {services[name]["environment"]["WORKSPACES_DIR"] for name in APP | {"migrate"}}
    assert len(workspaces) == 1
    (workspaces_dir,) = workspaces
    for name in APP | {"migrate"}:
        service = services[name]
        assert service["environment"]["SECRET_KEY"] == KEY, name
        mounts = {
            (v["source"], v["target"]) if isinstance(v, dict) else tuple(v.split(":")[:2])
            for v in service["volumes"]
        }
        # The same path inside and out: the worker's Docker engine bind-mounts it by that path.
        assert (workspaces_dir, workspaces_dir) in mounts, (name, mounts)
        assert ("state", "/app/var") in mounts, (name, mounts)


def test_the_file_refuses_to_start_without_a_secret_key() -> None:
    result = _compose("config", "-q", secret_key=None)
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr
    assert "change-me" not in COMPOSE_FILE.read_text()  # no placeholder to copy


def test_the_balancer_image_is_built_from_its_own_small_context(config: dict[str, Any]) -> None:
    build = config["services"]["lb"]["build"]
    context = ROOT / "docker" / "lb"
    assert os.path.samefile(build["context"], context)
    dockerfile = (context / "Dockerfile").read_text()
    assert "apt-get install" in dockerfile and "haproxy" in dockerfile
    assert (context / "haproxy.cfg").is_file()
