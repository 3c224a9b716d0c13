"""A fleet of two hosts on one Docker engine, from the images of `make images`.

Each "host" is a container with its own root filesystem and hostname (``host-a``, ``host-b``)
running a web process, an agent runner and a tools worker, on a user-defined network with
PostgreSQL, Redis and the HAProxy balancer (docker/lb, unchanged: it finds the hosts' web
processes by the network alias ``web``). What a real fleet keeps on a shared filesystem (NFS,
CephFS, a ReadWriteMany volume) is a directory of this machine bind-mounted into both hosts at
the same path (the Docker sandbox mounts a conversation's folder by that path, as in
docker-compose.yml); each host's own state (CC_VAR_DIR) stays on its own root filesystem.

The scripted model listens on the network's gateway address. The tests talk to the balancer
and to each host by their addresses on the network, and read the fleet's database directly.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import requests

from tests.helpers import require, wait_for

APP = "controlcenter:latest"
POSTGRES = "controlcenter-postgres:latest"
REDIS = "controlcenter-redis:latest"
LB = "controlcenter-lb:latest"
SANDBOX = "controlcenter-sandbox:latest"
SANDBOX_LABEL = "controlcenter.sandbox"  # tools_app.sandbox.docker_containers.LABEL
IMAGES = (APP, POSTGRES, REDIS, LB, SANDBOX)

ADMIN = ("admin", "fleet-admin-password-1")
DB_PASSWORD = "fleet-db-password"

# Each host: the three processes; SIGTERM (docker stop) reaches all of them (a warm shutdown for
# the worker, a drain for the runner) and the container ends when they have.
HOST_SCRIPT = r"""
trap 'kill -TERM $(jobs -p) 2>/dev/null; wait' TERM INT
python manage.py serve --host 0.0.0.0 --port 8000 &
python manage.py agent_runner &
celery -A controlcenter worker -Q tools --pool threads -c 8 -l INFO -n tools@%h &
if [ "${RUN_BEAT:-0}" = 1 ]; then celery -A controlcenter beat -l INFO -s /tmp/beat-schedule & fi
wait -n
kill -TERM $(jobs -p) 2>/dev/null
wait
"""


SETUP = "python manage.py migrate --noinput -v 0 && python manage.py ensure_admin"


def docker(*args: str, check: bool = True, timeout: float = 180) -> str:
    done = subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if check and done.returncode != 0:
        raise AssertionError(f"docker {' '.join(args[:3])}…: {done.stderr.strip()[-2000:]}")
    return done.stdout.strip()


def images_missing() -> list[str]:
    return [i for i in IMAGES if not docker("image", "inspect", i, check=False)]


def require_images() -> None:
    engine = shutil.which("docker") is not None and bool(docker("info", check=False))
    require(engine, "no Docker engine (make test-fleet starts none)")
    missing = images_missing()
    require(not missing, f"images missing: {', '.join(missing)} (make images sandbox-image)")


class Fleet:
    """The stack: ``start()`` brings up PostgreSQL, Redis, the migrations, hosts a and b and
    the balancer; ``close()`` removes every container, volume and the network."""

    def __init__(self, workdir: Path, *, llm_port_of: Any) -> None:
        self.name = f"ccf{uuid.uuid4().hex[:6]}"
        self.network = self.name
        self.workdir = workdir
        self.shared = workdir / "shared"  # the fleet's shared filesystem
        self.key = secrets.token_urlsafe(50)
        self.containers: set[str] = set()
        self.volumes: set[str] = set()
        self.gateway = ""
        self._llm_port_of = llm_port_of

    # --- the network and the scripted model's address ------------------------------------

    def create_network(self) -> str:
        docker("network", "create", "--driver", "bridge", self.network)
        self.gateway = docker(
            "network", "inspect", "-f", "{{(index .IPAM.Config 0).Gateway}}", self.network
        )
        return self.gateway

    # --- containers ------------------------------------------------------------------------

    def cname(self, role: str) -> str:
        return f"{self.name}-{role}"

    def run(self, role: str, image: str, *args: str, opts: tuple[str, ...] = ()) -> str:
        name = self.cname(role)
        docker("rm", "-f", name, check=False)
        docker("run", "-d", "--name", name, "--network", self.network, *opts, image, *args)
        self.containers.add(name)
        return name

    def ip(self, role: str) -> str:
        return docker(
            "inspect",
            "-f",
            "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
            self.cname(role),
        )

    def app_env(self, *, workspaces: Path | None = None, db: str = "pg") -> list[str]:
        shared = self.shared if workspaces is None else workspaces
        env = {
            "REDIS_URL": f"redis://{self.cname('redis')}:6379/0",
            "DATABASE_URL": f"postgres://cc:{DB_PASSWORD}@{self.cname(db)}:5432/cc",
            "SECRET_KEY": self.key,
            "ALLOWED_HOSTS": "*",
            "WORKSPACES_DIR": str(shared / "workspaces"),
            "SKILLS_DIR": str(shared / "skills"),
            "SANDBOX_BACKEND": "docker",
            "SANDBOX_IMAGE": SANDBOX,
            "SANDBOX_POOL_LABEL": self.name,
            "DJANGO_SUPERUSER_USERNAME": ADMIN[0],
            "DJANGO_SUPERUSER_PASSWORD": ADMIN[1],
            "LLM_PROVIDER": "openai",
            "LLM_BASE_URL": f"http://{self.gateway}:{self._llm_port_of()}/v1",
            "LLM_API_KEY": "scripted",
            "LLM_MODEL": "scripted-model",
            # Short, so a host that died is noticed within the test's patience.
            "AGENT_HEARTBEAT_TIMEOUT": "6",
            "TOOL_HEARTBEAT_TIMEOUT": "6",
            "MAINTENANCE_INTERVAL": "2",
            "DB_POOL_MAX_SIZE": "6",
        }
        out: list[str] = []
        for key, value in env.items():
            out += ["-e", f"{key}={value}"]
        return out

    def start_data(self) -> None:
        pgdata = f"{self.name}-pgdata"
        self.volumes.add(pgdata)
        self.run(
            "pg", POSTGRES, "postgres", "-c", "max_connections=200",
            opts=("-e", "POSTGRES_USER=cc", "-e", f"POSTGRES_PASSWORD={DB_PASSWORD}",
                  "-e", "POSTGRES_DB=cc", "-v", f"{pgdata}:/var/lib/postgresql/data"),
        )  # fmt: skip
        self.run("redis", REDIS)
        wait_for(self.pg_ready, timeout=60, interval=0.5, message="the fleet's PostgreSQL")

    def pg_ready(self, role: str = "pg") -> bool:
        probe = docker(
            "exec", self.cname(role), "pg_isready", "-h", "127.0.0.1", "-U", "cc", "-d", "cc",
            check=False,
        )  # fmt: skip
        return "accepting connections" in probe

    def migrate(self) -> None:
        self.shared.mkdir(parents=True, exist_ok=True)
        out = subprocess.run(
            ["docker", "run", "--rm", "--network", self.network, *self.app_env(), APP,
             "sh", "-c", SETUP],
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr[-3000:]

    def start_host(self, role: str, *, workspaces: Path | None = None, beat: bool = False) -> str:
        shared = self.shared if workspaces is None else workspaces
        shared.mkdir(parents=True, exist_ok=True)
        return self.run(
            role, APP, "bash", "-c", HOST_SCRIPT,
            opts=("--init", "--hostname", f"host-{role}", "--network-alias", "web",
                  "--user", "root", "--stop-timeout", "120",
                  "-v", f"{shared}:{shared}", "-v", "/var/run/docker.sock:/var/run/docker.sock",
                  "-e", f"RUN_BEAT={int(beat)}", *self.app_env(workspaces=workspaces)),
        )  # fmt: skip

    def start_lb(self) -> None:
        self.run("lb", LB)

    def start(self) -> None:
        self.start_data()
        self.migrate()
        self.start_host("a", beat=True)  # beat: one in the fleet
        self.start_host("b")
        self.start_lb()
        for role in ("a", "b"):
            self.wait_ready(role)
        wait_for(self.lb_ready, timeout=60, interval=0.5, message="the balancer")

    # --- health ----------------------------------------------------------------------------

    def ready(self, role: str) -> tuple[int, dict[str, Any]]:
        try:
            response = requests.get(f"http://{self.ip(role)}:8000/healthz/ready", timeout=10)
        except requests.RequestException as exc:
            return 0, {"error": str(exc)}
        try:
            return response.status_code, response.json()
        except ValueError:
            return response.status_code, {"body": response.text[:500]}

    def wait_ready(self, role: str, timeout: float = 120) -> None:
        def ok() -> bool:
            if docker("inspect", "-f", "{{.State.Running}}", self.cname(role)) != "true":
                raise AssertionError(f"host {role} stopped:\n{self.logs(role)}")
            return self.ready(role)[0] == 200

        wait_for(ok, timeout=timeout, interval=1, message=f"host {role} ready")

    def lb_ready(self) -> bool:
        try:
            return requests.get(f"{self.lb_url}/healthz/ready", timeout=5).status_code == 200
        except requests.RequestException:
            return False

    @property
    def lb_url(self) -> str:
        return f"http://{self.ip('lb')}:8000"

    def host_url(self, role: str) -> str:
        return f"http://{self.ip(role)}:8000"

    def logs(self, role: str, tail: int = 80) -> str:
        done = subprocess.run(
            ["docker", "logs", "--tail", str(tail), self.cname(role)],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        return (done.stdout + done.stderr)[-6000:]

    def healthy(self, role: str, kind: str) -> bool:
        """``manage.py health --kind`` in host ``role``'s container, as compose runs it."""
        done = subprocess.run(
            ["docker", "exec", self.cname(role), "python", "manage.py", "health", "--kind", kind],
            capture_output=True, text=True, timeout=90, check=False,
        )  # fmt: skip
        return done.returncode == 0

    def manage(self, role: str, *args: str) -> str:
        return docker("exec", self.cname(role), "python", "manage.py", *args, timeout=120)

    def worker(self, role: str, action: str) -> None:
        """Celery's own remote control: host ``role``'s worker stops (``cancel_consumer``) or
        starts (``add_consumer``) taking calls from the tools queue. A host just restarted
        answers readiness before its worker has joined the broker's broadcast: the command is
        repeated (it is idempotent) until the worker replies."""

        def replied() -> bool:
            done = subprocess.run(
                ["docker", "exec", self.cname(role), "celery", "-A", "controlcenter", "control",
                 action, "tools", "-d", f"tools@host-{role}", "--timeout", "5"],
                capture_output=True, text=True, timeout=60, check=False,
            )  # fmt: skip
            return done.returncode == 0 and f"tools@host-{role}" in done.stdout

        wait_for(replied, timeout=90, interval=1, message=f"host {role}'s worker to {action}")

    # --- the database, read by the tests -----------------------------------------------------

    def sql(self, query: str, *params: Any, role: str = "pg") -> list[tuple[Any, ...]]:
        dsn = f"postgresql://cc:{DB_PASSWORD}@{self.ip(role)}:5432/cc"
        with psycopg.connect(dsn, connect_timeout=10) as conn:
            return list(conn.execute(query, params).fetchall())

    # --- teardown ----------------------------------------------------------------------------

    def close(self) -> None:
        if self.containers:
            docker("rm", "-f", "-v", *sorted(self.containers), check=False, timeout=300)
        # The hosts' sandboxes (named by the deployment, which WORKSPACES_DIR derives).
        stale = docker("ps", "-aq", "--filter", f"label={SANDBOX_LABEL}={self.name}", check=False)
        if stale:
            docker("rm", "-f", *stale.split(), check=False, timeout=300)
        for volume in self.volumes:
            docker("volume", "rm", "-f", volume, check=False)
        docker("network", "rm", self.network, check=False)
        # The hosts wrote as root and the sandbox as its own uid.
        subprocess.run(["rm", "-rf", str(self.workdir)], check=False)


class Client:
    """A person in a browser: signs in through one address and uses the pages' own routes
    (CSRF included) and the REST API with a token."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.http = requests.Session()

    def sign_in(self, username: str = ADMIN[0], password: str = ADMIN[1]) -> None:
        page = self.http.get(f"{self.base_url}/accounts/login/", timeout=30)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        assert token, page.text[:500]
        done = self.http.post(
            f"{self.base_url}/accounts/login/",
            data={"username": username, "password": password,
                  "csrfmiddlewaretoken": token.group(1)},
            headers={"Referer": f"{self.base_url}/accounts/login/"},
            timeout=30, allow_redirects=False,
        )  # fmt: skip
        assert done.status_code == 302, (done.status_code, done.text[:500])

    def upload(self, conversation_id: int, name: str, body: bytes) -> dict[str, Any]:
        response = self.http.post(
            f"{self.base_url}/c/{conversation_id}/files/upload/",
            params={"name": name},
            data=body,
            headers={"X-CSRFToken": self.http.cookies.get("csrftoken", ""),
                     "Content-Type": "application/octet-stream",
                     "Referer": f"{self.base_url}/c/{conversation_id}/"},
            timeout=60,
        )  # fmt: skip
        assert response.status_code == 201, (response.status_code, response.text[:500])
        return dict(response.json()["file"])


class Api:
    """The REST API with a bearer token, through any address (the balancer by default)."""

    def __init__(self, base_url: str, token: str) -> None:
        self.base_url = base_url
        self.headers = {"Authorization": f"Bearer {token}"}

    def call(self, method: str, path: str, **kw: Any) -> requests.Response:
        return requests.request(
            method, f"{self.base_url}/api{path}", headers=self.headers, timeout=30, **kw
        )

    def conversation(self, title: str = "fleet") -> int:
        response = self.call("POST", "/conversations", json={"title": title})
        assert response.status_code == 201, response.text
        return int(response.json()["id"])

    def send(self, conversation_id: int, text: str) -> int:
        def sent() -> requests.Response | None:
            try:
                response = self.call(
                    "POST", f"/conversations/{conversation_id}/messages", json={"text": text}
                )
            except requests.RequestException:
                return None
            return response if response.status_code != 409 else None  # the last turn ending

        response = wait_for(sent, timeout=60, interval=0.5, message="the message accepted")
        assert response.status_code == 202, response.text
        return int(response.json()["turn"]["id"])

    def turn(self, turn_id: int) -> dict[str, Any]:
        response = self.call("GET", f"/turns/{turn_id}")
        assert response.status_code == 200, response.text
        return dict(response.json())

    def finished(self, turn_id: int, timeout: float = 90) -> dict[str, Any]:
        def done() -> dict[str, Any] | None:
            try:
                turn = self.turn(turn_id)
            except (requests.RequestException, AssertionError):
                return None  # a host or the database on its way back
            return turn if turn["status"] != "running" else None

        return wait_for(done, timeout=timeout, interval=0.5, message=f"turn {turn_id} ended")


def token_for(fleet: Fleet, role: str = "a") -> str:
    return fleet.manage(role, "api_tokens", "create", ADMIN[0], "--name", "fleet").splitlines()[-1]


@contextmanager
def paused(fleet: Fleet, role: str) -> Iterator[None]:
    """Host ``role``'s worker takes no calls inside the block."""
    fleet.worker(role, "cancel_consumer")
    try:
        yield
    finally:
        fleet.worker(role, "add_consumer")


def calls_of(fleet: Fleet, turn_id: int) -> list[dict[str, Any]]:
    rows = fleet.sql(
        "SELECT tool, status, worker, result::text, error FROM tools_app_toolcall"
        " WHERE turn_id = %s ORDER BY id",
        turn_id,
    )
    return [
        {"name": n, "status": s, "worker": w, "result": json.loads(r or "null"), "error": e}
        for n, s, w, r, e in rows
    ]


def settle(seconds: float) -> None:
    time.sleep(seconds)
