"""Every process of a distributed deployment reports itself in the database: the web process,
the agent runner, each Celery worker and beat. A thread of each process writes its row every
few seconds; the row says what the process is (kind, host, a worker's queues) and which keys it
holds (fingerprints, ``infra.fleet``). As it starts, the process also writes its marker into the
shared directories. The health commands (``manage.py health``) read a process's row, and
readiness compares this process with the live others. Embedded mode is one process: nothing to
compare, nothing is written."""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from chat_app.models import ProcessBeat
from infra import fleet, liveness
from infra.maintenance import close_connections_quietly

logger = logging.getLogger(__name__)

KINDS = ("web", "runner", "worker", "beat")
# The kinds that read and write the shared directories (beat only sends ticks).
DIR_KINDS = ("web", "runner", "worker")

_current: ProcessBeat | None = None
_stop = threading.Event()
# Held by a beat while it writes and by the leave: a beat already under way when the process
# stops would otherwise write its row back after the leave deleted it.
_writing = threading.Lock()


def beat_seconds() -> float:
    return max(0.5, min(5.0, settings.PROCESS_HEARTBEAT_TIMEOUT / 4))


def process_current() -> ProcessBeat | None:
    """This process's registration, if it joined."""
    return _current


def process_join(kind: str, *, name: str = "", queues: str = "") -> ProcessBeat | None:
    """Register this process (distributed mode; once): markers first, so a process the others
    count is one whose marker is already there; then the row, and the thread that keeps it
    fresh. ``name``: the runner's own name, so its two beats can be matched."""
    global _current
    if settings.MODE != "distributed" or _current is not None:
        return _current
    beat = ProcessBeat(
        name=name or fleet.process_name(kind),
        kind=kind,
        host=fleet.this_host(),
        queues=queues,
        secret_key_id=fleet.secret_key_id(),
        secrets_key_ids=",".join(fleet.secrets_key_ids()),
    )
    try:
        fleet.markers_write(beat.name)
    except OSError as exc:  # readiness names the directory; the process still starts
        logger.error("%s: cannot write its marker into a shared directory (%s)", beat.name, exc)
    _current = beat
    _beat_once()
    threading.Thread(target=_beat_loop, name="process-beat", daemon=True).start()
    atexit.register(process_leave)
    with contextlib.suppress(Exception):
        processes_forget_dead()
        fleet.markers_forget([p.name for p in ProcessBeat.objects.all()])
    return beat


def process_leave() -> None:
    """A process that stops on purpose says so at once (and takes its markers)."""
    global _current
    with _writing:
        beat, _current = _current, None
        _stop.set()
    if beat is None:
        return
    # The row first: it is what the others count (and a stop that runs out of time should
    # lose the markers' tidying, not this). At exit a pooled connection may already be closed
    # under us: once more on a fresh one, or the row stays until it goes stale.
    for attempt in range(2):
        try:
            ProcessBeat.objects.filter(name=beat.name).delete()
            break
        except Exception as exc:
            if attempt:
                logger.warning("%s: could not remove its row as it stopped (%s)", beat.name, exc)
            close_connections_quietly("process beat")
    close_connections_quietly("process beat")
    for key in alive_keys(beat.kind, beat.queues):
        liveness.remove(key)
    with contextlib.suppress(Exception):
        fleet.markers_remove(beat.name)


def alive_keys(kind: str, queues: str) -> list[str]:
    """The liveness files a process keeps (``infra.liveness``): a worker one per queue; the
    runner's is touched by its event loop's own beat (``chat_app.runner``)."""
    if kind == "worker":
        return [f"worker:{q}" for q in queues.split(",") if q]
    return [] if kind in ("runner", "web") else [kind]


def _beat_once() -> None:
    with _writing:
        if _current is not None:
            _beat_write(_current)


def _beat_write(beat: ProcessBeat) -> None:
    for key in alive_keys(beat.kind, beat.queues):
        liveness.touch(key)  # first: the database may be what is down
    try:
        # update_or_create: a row someone deleted (a test database's flush) comes back.
        row, _created = ProcessBeat.objects.update_or_create(
            name=beat.name,
            defaults={
                "kind": beat.kind,
                "host": beat.host,
                "queues": beat.queues,
                "beat_at": timezone.now(),
                "secret_key_id": beat.secret_key_id,
                "secrets_key_ids": beat.secrets_key_ids,
            },
        )
        beat.started_at = row.started_at
        fleet.markers_write(beat.name)
    except Exception as exc:
        # Its heartbeat goes stale: the health command says this process is not healthy.
        logger.warning("%s: could not report itself (%s)", beat.name, exc)
    close_connections_quietly("process beat")


def _beat_loop() -> None:
    while not _stop.wait(beat_seconds()):
        _beat_once()


def processes_alive(kinds: tuple[str, ...] = KINDS) -> list[ProcessBeat]:
    limit = timezone.now() - timedelta(seconds=settings.PROCESS_HEARTBEAT_TIMEOUT)
    return list(ProcessBeat.objects.filter(beat_at__gte=limit, kind__in=kinds))


def processes_forget_dead() -> int:
    """Rows of processes dead for a long time (kept a while for the record)."""
    limit = timezone.now() - timedelta(hours=1)
    deleted, _ = ProcessBeat.objects.filter(beat_at__lt=limit).delete()
    return deleted


def fleet_members(kinds: tuple[str, ...] = KINDS) -> list[fleet.Member]:
    """The other live processes, as ``infra.fleet`` compares them."""
    me = _current.name if _current is not None else ""
    return [
        fleet.Member(
            name=p.name,
            started_at=p.started_at.timestamp(),
            secret_key_id=p.secret_key_id,
            secrets_key_ids=tuple(p.secrets_key_ids.split(",")),
        )
        for p in processes_alive(kinds)
        if p.name != me
    ]


def me_started() -> float:
    """When this process started, as the others see it (now, for one that did not join)."""
    beat = _current
    if beat is not None and beat.started_at is not None:
        return beat.started_at.timestamp()
    return timezone.now().timestamp()


def worker_started(sender: Any = None, **_: object) -> None:
    """Celery's ``worker_init``: a tools or browser worker joins with its queues."""
    app = getattr(sender, "app", None)
    queues = sorted(app.amqp.queues.consume_from) if app is not None else []
    process_join("worker", queues=",".join(queues))


def beat_started(**_: object) -> None:
    process_join("beat")
