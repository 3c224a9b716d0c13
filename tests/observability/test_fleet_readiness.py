"""Every process of a fleet checks in readiness that it sees what the others see: the same
shared directories (a marker each process writes, checked against the others' registrations)
and the same keys. Two "hosts" are two app servers on the test database; the odd one is refused
with the directory or the key named, and only it (the one that was there first stays ready).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chat_app.models import ProcessBeat, Provider
from tests.e2e.conftest import _SERVERS, run_app_server
from tests.helpers import wait_for
from tests.observability.test_readiness import probe

pytestmark = pytest.mark.distributed_only


def ready(url: str) -> tuple[int, dict]:
    return probe(url + "/healthz/ready")


def registered(count: int) -> bool:
    return ProcessBeat.objects.filter(kind="web").count() >= count


def test_it_is_ready_on_hosts_that_share_the_directories(transactional_db):
    with (
        run_app_server("--no-beat", log_name="test-fleet-a.log") as first,
        run_app_server("--no-beat", log_name="test-fleet-b.log") as second,
    ):
        wait_for(lambda: registered(2), timeout=20, message="both servers to register")
        for url in (first, second):
            status, body = ready(url)
            assert status == 200, body
            assert body["shared_dirs"] == {"ok": True} and body["keys"] == {"ok": True}
            assert body["process"].startswith("web@")


def test_it_refuses_the_host_that_does_not_see_the_shared_workspaces(transactional_db, tmp_path):
    elsewhere = tmp_path / "other-host-workspaces"
    with run_app_server("--no-beat", log_name="test-fleet-a.log") as shared:
        with run_app_server(
            "--no-beat", log_name="test-fleet-odd.log", WORKSPACES_DIR=str(elsewhere)
        ) as odd:
            wait_for(lambda: registered(2), timeout=20, message="both servers to register")
            status, body = ready(odd)
            assert status == 503, body
            error = body["shared_dirs"]["error"]
            assert f"WORKSPACES_DIR {elsewhere} is not the directory the other processes see" in (
                error
            )
            assert "SKILLS_DIR" not in error  # that one it shares
            assert any(str(elsewhere) in reason for reason in body["reasons"])
            status, body = ready(shared)
            assert status == 200, body  # the fleet that was there goes on
        # Its marker went with it.
        assert not list((elsewhere / ".cc-hosts").iterdir())


def test_it_refuses_the_host_whose_key_differs(transactional_db):
    Provider.objects.create(name="stored", model="m", api_key="sk-stored-secret")
    other_key = "another-key-" + "x" * 40
    with (
        run_app_server("--no-beat", log_name="test-fleet-a.log") as shared,
        run_app_server("--no-beat", log_name="test-fleet-odd.log", SECRET_KEY=other_key) as odd,
    ):
        wait_for(lambda: registered(2), timeout=20, message="both servers to register")
        status, body = ready(odd)
        assert status == 503, body
        assert "this process's SECRET_KEY differs" in body["keys"]["error"]
        assert "every process of a deployment needs the same" in body["keys"]["error"]
        # And what is stored, it cannot read: the reason, rather than failed calls.
        assert "chat_app.Provider.api_key" in body["secrets"]["error"]
        status, body = ready(shared)
        assert status == 200, body
        assert body["keys"]["ok"] is True and body["keys"]["differ"]  # it names the odd one


def test_it_registers_each_process_with_fingerprints_not_keys(transactional_db):
    from django.conf import settings

    # Other app servers of the session (the e2e tests', the shared ones) are registered on
    # this database too, their rows written again after each test's flush: the one to look
    # at is named by this server's process id (``kind@host:pid:random``).
    with run_app_server("--no-beat", log_name="test-fleet-a.log") as url:
        mine = ProcessBeat.objects.filter(kind="web", name__contains=f":{_SERVERS[url].pid}:")
        wait_for(mine.exists, timeout=20, message="the server to register")
        beat = mine.get()
        assert settings.SECRET_KEY not in (beat.secret_key_id + beat.secrets_key_ids)
        assert len(beat.secret_key_id) == 16 and beat.host
        markers = Path(settings.WORKSPACES_DIR) / ".cc-hosts"
        assert beat.name not in {m.name for m in markers.iterdir()}  # named by a digest
    assert not ProcessBeat.objects.filter(name=beat.name).exists()  # it left on SIGTERM
