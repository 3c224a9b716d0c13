"""docker-compose.yml as docs/DEPLOYMENT.md says to run it, from the images of `make images`:
`docker-compose up -d --scale web=3` serves through the balancer, every service turns healthy,
and a conversation's workspace stays writable for uploads through the web tier after a tool
call's sandbox (another uid, another container) has written to it.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from django.conf import settings

from tests.conftest import ROOT
from tests.fleet.fleet import ADMIN, Api, Client, require_images
from tests.helpers import wait_for
from tests.llm_server import Call, Reply, ScriptedLLM
from tests.stack import free_port

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(900)]

SERVICES = {"beat", "browser-worker", "lb", "postgres", "redis", "runner", "worker"}


def host_address() -> str:
    """This machine's address, which the compose network's containers reach it by."""
    return subprocess.run(
        ["hostname", "-I"], capture_output=True, text=True, check=True
    ).stdout.split()[0]


class Compose:
    def __init__(self, workdir: Path, llm: ScriptedLLM) -> None:
        self.project = f"ccc{secrets.token_hex(3)}"
        self.workdir = workdir
        self.port = free_port()
        self.env = {
            **os.environ,
            "SECRET_KEY": secrets.token_urlsafe(50),
            "WORKSPACES_DIR": str(workdir / "workspaces"),
            "LB_PORT": str(self.port),
            "DJANGO_SUPERUSER_PASSWORD": ADMIN[1],
            "LLM_PROVIDER": "openai",
            "LLM_BASE_URL": llm.openai_base_url,
            "LLM_API_KEY": "scripted",
            "LLM_MODEL": "scripted-model",
            "SANDBOX_BACKEND": "docker",
        }
        for name in ("REDIS_URL", "DATABASE_URL", "CC_VAR_DIR", "SANDBOX_UID"):
            self.env.pop(name, None)
        self.env.update(
            {
                k[len("FLEET_COMPOSE_") :]: v
                for k, v in os.environ.items()
                if k.startswith("FLEET_COMPOSE_")
            }  # fmt: skip
        )

    def __call__(self, *args: str, timeout: float = 600) -> str:
        done = subprocess.run(
            ["docker-compose", "-p", self.project, *args],
            cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def states(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for cid in self("ps", "-q").split():
            name, state = subprocess.run(
                ["docker", "inspect", "-f",
                 '{{index .Config.Labels "com.docker.compose.service"}} '
                 "{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}",
                 cid],
                capture_output=True, text=True, check=True,
            ).stdout.split()  # fmt: skip
            out[f"{name}/{cid[:6]}"] = state
        return out


@pytest.fixture(scope="module")
def compose() -> Iterator[Compose]:
    require_images()
    llm = ScriptedLLM(host=host_address(), keep_alive=True).start()
    workdir = Path(settings.VAR_DIR) / "compose" / time.strftime("%H%M%S")
    (workdir / "workspaces").mkdir(parents=True)
    stack = Compose(workdir, llm)
    stack.llm = llm  # type: ignore[attr-defined]
    try:
        stack("up", "-d", "--scale", "web=3")
        yield stack
    finally:
        try:
            stack("down", "-v", "--timeout", "30")
        finally:
            llm.stop()
            subprocess.run(["rm", "-rf", str(workdir)], check=False)


def test_scaled_to_three_web_replicas_every_service_turns_healthy_behind_the_balancer(
    compose: Compose,
) -> None:
    def healthy() -> dict[str, str] | None:
        states = compose.states()
        running = {k: v for k, v in states.items() if not k.startswith("migrate/")}
        return states if running and all(v == "healthy" for v in running.values()) else None

    states = wait_for(healthy, timeout=240, interval=2, message="every service healthy")
    assert {k.split("/")[0] for k in states} == SERVICES | {"web", "migrate"}
    assert sum(k.startswith("web/") for k in states) == 3
    seen: set[str] = set()

    def three() -> bool:
        seen.add(requests.get(f"{compose.url}/healthz/ready", timeout=10).json()["process"])
        return len(seen) == 3

    wait_for(three, timeout=60, interval=0.1, message=f"three web replicas: {seen}")


def test_uploads_go_on_after_a_sandbox_wrote_to_the_workspace(compose: Compose) -> None:
    llm: ScriptedLLM = compose.llm  # type: ignore[attr-defined]
    token = compose("exec", "-T", "web", "python", "manage.py", "api_tokens", "create",
                    ADMIN[0]).splitlines()[-1]  # fmt: skip
    api = Api(compose.url, token)
    conversation = api.conversation("uploads and sandboxes")
    person = Client(compose.url)
    person.sign_in()
    person.upload(conversation, "first.txt", b"one\n")

    llm.script(
        Reply(calls=[Call("file_write", {"path": "made.txt", "content": "by the sandbox"})]),
        Reply(text="written"),
    )
    turn: dict[str, Any] = api.finished(api.send(conversation, "write a file"), timeout=180)
    assert turn["status"] == "succeeded", turn

    person.upload(conversation, "second.txt", b"two\n")  # through the web tier again
    folder = compose.workdir / "workspaces" / f"c{conversation}"
    assert {p.name for p in folder.iterdir()} >= {"first.txt", "made.txt", "second.txt"}
    assert (folder / "made.txt").read_text() == "by the sandbox"
