"""Many processes share one Docker engine: every worker and app server runs a maintenance pass
every 10 s that reaps idle sandbox containers, while others create containers for new calls.

Seen while benchmarking: a container was created, started, and killed in the same second by
someone else's maintenance pass; the call failed with "is not running: Removal In Progress".
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from tests.helpers import require
from tools_app.sandbox.docker_containers import ContainerPool, container_name

IMAGE = os.environ.get("SANDBOX_IMAGE") or "controlcenter-sandbox:latest"


@pytest.fixture
def pool() -> ContainerPool:
    pool = ContainerPool(
        image=IMAGE,
        uid=10001,
        memory=256 << 20,
        pids=64,
        cpus=1.0,
        tmpfs_size="16m",
        label=f"scn-{uuid.uuid4().hex[:8]}",  # only this test's containers
    )
    try:
        pool.api.inspect_image(IMAGE)
    except Exception as exc:
        require(False, f"Docker engine or {IMAGE} not available: {exc}")
    yield pool
    for c in pool.api.containers(all=True, filters={"label": pool.label}):
        pool.api.remove_container(c["Id"], force=True)


@pytest.mark.docker
def test_it_does_not_reap_a_container_another_process_is_starting(pool, tmp_path: Path):
    workspace_id = f"race-{uuid.uuid4().hex[:8]}"
    name = container_name(workspace_id, False)
    # What _find_or_create does in the other process, stopped between create and start.
    spec = pool._container_spec(name, workspace_id, tmp_path, False)
    cid = pool.api.create_container(IMAGE, **spec)["Id"]

    assert pool.reap_idle(600) == 0  # a maintenance pass elsewhere, 10 minutes' idle limit

    pool.api.start(cid)  # the creating process carries on
    assert pool.api.inspect_container(cid)["State"]["Running"]
