"""``echo hi`` through the whole pipeline, against the bare sandbox operations it is built on.

Distributed mode (Celery on Redis, a separate worker process, Postgres). Measured variants:

* ``pipeline_docker``: bind a ``shell_exec`` call in a conversation, dispatch it and publish its
  queued card (what the agent loop does), until its ``succeeded`` event arrives on the channel
  layer: binding → Celery → worker → warm Docker sandbox → stored result → event.
* ``docker_exec_cli`` / ``docker_exec_sdk``: ``docker exec`` into the same warm container
  (the CLI; the SDK's ``exec_run``). ``docker_run_rm``: a fresh container of the same image
  with the same hardening as the warm ones.
* ``pipeline_bubblewrap``: the pipeline with the shell group's backend set to bubblewrap;
  ``subprocess_sh``: ``sh -c 'echo hi'`` on the host.
* ``docker_backend_direct`` / ``bwrap_backend_direct``: the sandbox backends' own ``exec``
  called in this process, which splits the pipeline's cost into sandbox and orchestration.
  The docker backend hands commands to a runner inside the warm container;
  ``docker_backend_exec_per_command_direct`` is the same backend with the runner off (one
  ``docker exec`` per command, what images without python3 get).

The variants run interleaved (every round runs each once, in a shuffled order) so load from
elsewhere on the machine hits them alike; ratios compare medians from the same run. The two
pipeline variants switch the shell group's backend, which moves the configuration token on;
the first call after a switch (every process reads the configuration again, about 1 ms each)
is made but not timed, so the pipeline figures are those of a settled configuration.
``BENCH_SANDBOX_SAMPLES`` sets the samples per variant (default 60, after 5 warm-up rounds).
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.common import emit, setup_django, start_worker, stats_ms, stop

SAMPLES = int(os.environ.get("BENCH_SANDBOX_SAMPLES", "60"))
WARMUP = 5
COMMAND = "echo hi"
TARGET_VS_DOCKER_EXEC = 1.3
TARGET_VS_DOCKER_RUN = 0.3
TARGET_ORCHESTRATION_MS = 10.0  # issue 9: what the pipeline adds to the backend's own exec


def log(text: str) -> None:
    print(f"[sandbox_roundtrip] {text}", file=sys.stderr, flush=True)


def _set_backend(backend: str) -> None:
    from tools_app.models import ToolGroupConfig

    ToolGroupConfig.objects.update_or_create(
        name="shell", defaults={"settings": {"sandbox_backend": backend}}
    )


class Pipeline:
    """Calls through the real path; results read from the conversation's event group."""

    def __init__(self, layer: Any, user_id: int, conversation_id: int) -> None:
        self.layer = layer
        self.user_id = user_id
        self.conversation_id = conversation_id
        self.channel = ""
        self.backend = ""

    async def start(self) -> None:
        from infra.events import conversation_group

        self.channel = await self.layer.new_channel()
        await self.layer.group_add(conversation_group(self.conversation_id), self.channel)

    def _bind_and_dispatch(self) -> int:
        from django.db import transaction

        from tools_app.events import toolcall_publish
        from tools_app.runtime import BindContext
        from tools_app.services.binding import CallRequest, toolcall_bind, toolcall_dispatch

        ctx = BindContext(user_id=self.user_id, conversation_id=self.conversation_id, source="chat")
        with transaction.atomic():
            call = toolcall_bind(
                request=CallRequest(tool="shell_exec", arguments={"command": COMMAND}), ctx=ctx
            )
            assert call.status == "queued", call.error
            toolcall_dispatch(call)
        toolcall_publish(call, wait=False)  # as the agent loop does
        return call.pk

    async def run(self, backend: str) -> float:
        from asgiref.sync import sync_to_async

        if backend != self.backend:  # outside the timed part
            await sync_to_async(_set_backend)(backend)
            self.backend = backend
            # The change moves the configuration token on, so the next call reads the tool
            # configuration again in every process (bench, worker): a cost of changing the
            # settings, not of a call, so that call is not timed.
            await self._call()
        return await self._call()

    async def _call(self) -> float:
        from asgiref.sync import sync_to_async

        started = time.perf_counter()
        call_id = await sync_to_async(self._bind_and_dispatch)()
        while True:
            payload = (await self.layer.receive(self.channel))["payload"]
            if payload.get("type") != "toolcall" or payload.get("id") != call_id:
                continue
            if payload["status"] == "succeeded":
                return time.perf_counter() - started
            if payload["status"] in ("failed", "denied", "cancelled"):
                raise RuntimeError(f"the benchmark call {call_id} ended {payload['status']}")


def _timed(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def _check(argv: list[str]) -> Callable[[], None]:
    def run() -> None:
        out = subprocess.run(argv, capture_output=True, text=True, check=False)
        if out.returncode != 0 or out.stdout != "hi\n":
            raise RuntimeError(f"{argv[:3]} failed: {out.returncode} {out.stderr.strip()}")

    return run


def docker_run_argv(image: str, workspace: str, uid: int) -> list[str]:
    """A one-off container hardened like the warm ones (see docker_containers)."""
    return [
        "docker", "run", "--rm", "--init", "--network", "none",
        "--user", f"{uid}:{uid}", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
        "--read-only", "--tmpfs", "/tmp:rw,nosuid,nodev,size=64m,mode=1777",
        "--memory", "512m", "--memory-swap", "512m", "--pids-limit", "128", "--cpus", "1",
        "--ulimit", "nofile=256:256", "--ulimit", "nproc=512:512",
        "--mount", f"type=bind,source={workspace},target=/workspace", "-w", "/workspace",
        image, "echo", "hi",
    ]  # fmt: skip


def measure(user_id: int, conversation_id: int) -> dict[str, Any]:
    from channels.layers import get_channel_layer

    from tools_app.runtime import workspace_dir_for
    from tools_app.sandbox import ExecRequest, get_sandbox
    from tools_app.sandbox.selection import docker_container_name

    workspace_id = f"c{conversation_id}"
    workspace = workspace_dir_for(workspace_id)
    from tools_app.sandbox.docker_backend import DockerSandbox

    docker = get_sandbox("docker")
    assert isinstance(docker, DockerSandbox)
    docker_exec_path = DockerSandbox(
        image=docker.image, uid=docker.uid, pool_label=docker.pool.namespace, runner=False
    )
    bwrap = get_sandbox("bubblewrap")
    for backend in (docker, bwrap):
        ok, detail = backend.health()
        if not ok:
            raise RuntimeError(f"{backend.name} sandbox unavailable: {detail}")

    def direct(sandbox: Any) -> Callable[[], None]:
        def run() -> None:
            req = ExecRequest(argv=["bash", "-c", COMMAND], timeout=60, max_output=200_000)
            result = sandbox.exec(workspace_id, workspace, req)
            if result.stdout != "hi\n":
                raise RuntimeError(f"{sandbox.name} direct exec failed: {result}")

        return run

    async def run() -> dict[str, list[float]]:
        pipeline = Pipeline(get_channel_layer(), user_id, conversation_id)
        await pipeline.start()
        log("warming the docker sandbox through the pipeline")
        await pipeline.run("docker")  # creates the warm container
        info = docker.api.inspect_container(docker_container_name(workspace_id))
        cid = info["Id"]
        import docker as docker_sdk

        container = docker_sdk.from_env().containers.get(cid)

        def sdk_exec() -> None:
            code, out = container.exec_run(["echo", "hi"])
            if code != 0 or out != b"hi\n":
                raise RuntimeError(f"SDK exec failed: {code} {out!r}")

        sync: dict[str, Callable[[], None]] = {
            "docker_exec_cli": _check(["docker", "exec", cid, "echo", "hi"]),
            "docker_exec_sdk": sdk_exec,
            "docker_run_rm": _check(
                docker_run_argv(info["Config"]["Image"], str(workspace), 10001)
            ),
            "docker_backend_direct": direct(docker),
            "docker_backend_exec_per_command_direct": direct(docker_exec_path),
            "bwrap_backend_direct": direct(bwrap),
            "subprocess_sh": _check(["sh", "-c", COMMAND]),
        }
        pipelines = {"pipeline_docker": "docker", "pipeline_bubblewrap": "bubblewrap"}
        names = [*pipelines, *sync]
        samples: dict[str, list[float]] = {name: [] for name in names}
        shuffle = random.Random(20240601).shuffle
        for round_ in range(WARMUP + SAMPLES):
            if round_ == WARMUP:
                log(f"warm-up done; measuring {SAMPLES} rounds")
            order = list(names)
            shuffle(order)
            for name in order:
                if name in pipelines:
                    elapsed = await pipeline.run(pipelines[name])
                else:
                    elapsed = _timed(sync[name])
                if round_ >= WARMUP:
                    samples[name].append(elapsed)
        return samples

    samples = asyncio.run(run())
    return {name: stats_ms(values) for name, values in samples.items()}


def _ratio(a: dict[str, float], b: dict[str, float]) -> float:
    return round(a["median_ms"] / b["median_ms"], 3)


def summarise(stats: dict[str, Any]) -> dict[str, Any]:
    pipe = stats["pipeline_docker"]
    out: dict[str, Any] = {
        **stats,
        "pipeline_vs_docker_exec_ratio": _ratio(pipe, stats["docker_exec_cli"]),
        "pipeline_vs_docker_run_ratio": _ratio(pipe, stats["docker_run_rm"]),
        "pipeline_vs_docker_exec_sdk_ratio": _ratio(pipe, stats["docker_exec_sdk"]),
        "pipeline_p95_vs_docker_exec_p95_ratio": round(
            pipe["p95_ms"] / stats["docker_exec_cli"]["p95_ms"], 3
        ),
        "bubblewrap_pipeline_vs_subprocess_ratio": _ratio(
            stats["pipeline_bubblewrap"], stats["subprocess_sh"]
        ),
        "bwrap_direct_vs_subprocess_ratio": _ratio(
            stats["bwrap_backend_direct"], stats["subprocess_sh"]
        ),
        # What the pipeline adds on top of the sandbox backend's own exec (median difference).
        "orchestration_overhead_docker_ms": round(
            pipe["median_ms"] - stats["docker_backend_direct"]["median_ms"], 3
        ),
        "orchestration_overhead_bubblewrap_ms": round(
            stats["pipeline_bubblewrap"]["median_ms"] - stats["bwrap_backend_direct"]["median_ms"],
            3,
        ),
        "targets": {
            "pipeline_vs_docker_exec_ratio": TARGET_VS_DOCKER_EXEC,
            "pipeline_vs_docker_run_ratio": TARGET_VS_DOCKER_RUN,
            "orchestration_overhead_ms": TARGET_ORCHESTRATION_MS,
        },
    }
    out["meets_targets"] = {
        "pipeline_vs_docker_exec_ratio": out["pipeline_vs_docker_exec_ratio"]
        <= TARGET_VS_DOCKER_EXEC,
        "pipeline_vs_docker_run_ratio": out["pipeline_vs_docker_run_ratio"] <= TARGET_VS_DOCKER_RUN,
        "orchestration_overhead_docker_ms": out["orchestration_overhead_docker_ms"]
        <= TARGET_ORCHESTRATION_MS,
        "orchestration_overhead_bubblewrap_ms": out["orchestration_overhead_bubblewrap_ms"]
        <= TARGET_ORCHESTRATION_MS,
    }
    return out


def main() -> None:
    setup_django("distributed")
    from django.contrib.auth import get_user_model

    from chat_app.models import Conversation
    from tools_app.runtime import workspace_dir_for
    from tools_app.sandbox import get_sandbox

    User = get_user_model()
    User.objects.filter(username="bench-sandbox").delete()
    user = User.objects.create_user("bench-sandbox", password="bench-password-1")
    # A member may use only what is granted (issue 22): the shell tools granted to everyone,
    # as an admin would.
    from tools_app.models import ToolGrant
    from tools_app.services.grants import everyone_group

    ToolGrant.objects.get_or_create(group=everyone_group(), kind="group", name="shell")
    # A random id: sandbox containers are named after it on an engine other runs share.
    conversation = Conversation.objects.create(
        pk=random.randint(10**6, 2 * 10**9), owner=user, title="bench sandbox"
    )
    workspace_id = f"c{conversation.pk}"
    load_before = os.getloadavg()
    worker = start_worker("distributed")
    try:
        stats = measure(user.pk, conversation.pk)
    finally:
        stop(worker)
        get_sandbox("docker").release(workspace_id)
        shutil.rmtree(workspace_dir_for(workspace_id), ignore_errors=True)
        conversation.delete()
    result = summarise(stats)
    result["samples_per_variant"] = SAMPLES
    result["load_average"] = {
        "before": [round(x, 2) for x in load_before],
        "after": [round(x, 2) for x in os.getloadavg()],
    }
    emit(result)


if __name__ == "__main__":
    main()
