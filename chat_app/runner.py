"""The agent runner: one asyncio event loop that streams many turns' model rounds at once.

Rounds reach it as Celery messages on the ``agent`` queue (sent by ``turns.round_send``), over
the same broker as everything else: kombu's ``memory://`` inside the web process in embedded
mode, Redis in distributed mode. A consumer thread takes each message, acknowledges it, and
schedules ``round_run`` on the loop; a semaphore caps the rounds in flight (``capacity``), so a
full runner leaves messages on the queue for another runner. Model I/O is a coroutine; the
short database work of a round runs on a small thread pool (``db_threads``).

Embedded mode starts one runner in a thread of the web process (``chat_app.embedded``);
distributed mode runs ``manage.py agent_runner`` as its own process (one or more). Every
runner reports itself alive every few seconds (``services.runner_beats``); the turns of a
runner that stops reporting are ended by the reaper (``chat_app.services.reaper``). A
message lost with a Redis restart is queued again by the reaper too; claiming a turn is a
conditional UPDATE, so a round never runs twice.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.conf import settings
from django.db import close_old_connections
from kombu import Connection, Message
from kombu.mixins import ConsumerMixin

from chat_app.services.live import RoundSupervisor
from chat_app.services.turns import AGENT_ROUND_TASK
from infra import metrics
from infra.event_loop import new_event_loop
from infra.logs import log_context

logger = logging.getLogger(__name__)

LOOP_ANSWER_SECONDS = 5.0  # a loop that does not run a callback within this is not beating


def default_name() -> str:
    return f"agent@{socket.gethostname()}:{os.getpid()}"


class _QueueConsumer(ConsumerMixin):
    """kombu's reconnecting consumer loop on the ``agent`` queue (a Redis restart is survived
    by reconnecting with backoff)."""

    def __init__(self, connection: Connection, runner: AgentRunner) -> None:
        self.connection = connection
        self.runner = runner

    def get_consumers(self, consumer_cls: Any, channel: Any) -> list[Any]:
        from infra.celery_app import app

        queue = app.amqp.queues["agent"]
        return [
            consumer_cls(
                queues=[queue],
                callbacks=[self.on_message],
                accept=["json"],
                prefetch_count=self.runner.prefetch,
            )
        ]

    def on_message(self, body: Any, message: Message) -> None:
        turn_id = _turn_id(body, message)
        message.ack()
        if turn_id is None:
            return
        self.runner.submit(turn_id)

    def on_connection_error(self, exc: Exception, interval: float) -> None:
        logger.warning("agent runner: broker unreachable (%s); retrying in %.1f s", exc, interval)


def _turn_id(body: Any, message: Message) -> int | None:
    task = (message.headers or {}).get("task")
    try:
        args = body[0] if isinstance(body, list | tuple) else json.loads(body)[0]
        turn_id = int(args[0])
    except (TypeError, ValueError, IndexError, KeyError):
        turn_id = None
    if task != AGENT_ROUND_TASK or turn_id is None:
        logger.error("agent runner: dropping a message it cannot run (task %r)", task)
        return None
    return turn_id


class AgentRunner:
    def __init__(
        self,
        *,
        name: str | None = None,
        capacity: int | None = None,
        db_threads: int | None = None,
    ) -> None:
        self.name = name or default_name()
        self.capacity = capacity or settings.AGENT_RUNNER_CAPACITY
        self.db_threads = db_threads or settings.AGENT_RUNNER_DB_THREADS
        self.prefetch = min(self.capacity, 64)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.supervisor: RoundSupervisor | None = None
        self._slots = threading.BoundedSemaphore(self.capacity)
        self._stopping = threading.Event()
        self._loop_thread: threading.Thread | None = None
        self._consumer_thread: threading.Thread | None = None
        self._consumer: _QueueConsumer | None = None
        self._beat_thread: threading.Thread | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._ready = threading.Event()

    # --- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Warm up, start the loop thread and the consumer thread; return once both run."""
        self._warm_up()
        self._loop_thread = threading.Thread(target=self._run_loop, name="agent-loop", daemon=True)
        self._loop_thread.start()
        if not self._ready.wait(timeout=30):
            raise RuntimeError("the agent runner's event loop did not start")
        self._consumer_thread = threading.Thread(
            target=self._consume, name="agent-consumer", daemon=True
        )
        self._consumer_thread.start()
        self._beat_thread = threading.Thread(target=self._beat, name="agent-beat", daemon=True)
        self._beat_thread.start()
        metrics.RUNNER_CAPACITY.set(self.capacity)
        logger.info("agent runner %s started (capacity %d)", self.name, self.capacity)

    def _warm_up(self) -> None:
        """Import what a first round needs before taking rounds (the provider SDKs take
        seconds to import, the tool schemas are built once): otherwise the first person to
        write after a start waits for it. Only the SDKs of the kinds of provider configured
        (OpenAI's when none is yet): Anthropic's alone holds ~40 MiB in every runner, and a
        kind added later is imported by its first round."""
        from chat_app.providers import provider_class
        from chat_app.selectors import provider_kinds_configured
        from chat_app.services.tool_specs import tool_specs
        from tools_app import selectors

        try:
            for kind in provider_kinds_configured():
                provider_class(kind)
            tool_specs(selectors.enabled_tools(), strict=True)
        except Exception:  # a database not migrated yet: the first round does it
            logger.warning(
                "agent runner: could not import the provider SDKs or build the tool schemas ahead",
                exc_info=True,
            )
        finally:
            close_old_connections()

    @property
    def alive(self) -> bool:
        return bool(
            self._loop_thread
            and self._loop_thread.is_alive()
            and self._consumer_thread
            and self._consumer_thread.is_alive()
        )

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    def stop(self, *, grace: float = 0.0) -> None:
        """Stop taking rounds; give those in flight ``grace`` seconds, then end them clearly
        (their turns fail with a notice saying the runner shut down)."""
        self._stopping.set()
        if self._consumer is not None:
            self._consumer.should_stop = True
        if self._consumer_thread is not None:
            self._consumer_thread.join(timeout=10)
        loop = self.loop
        if loop is None or not loop.is_running():
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(grace), loop).result(timeout=grace + 60)
        loop.call_soon_threadsafe(loop.stop)
        if self._loop_thread is not None:
            self._loop_thread.join(timeout=10)
        from chat_app.services.runner_beats import runner_gone
        from infra import liveness

        liveness.remove("runner")
        try:
            runner_gone(name=self.name)
        finally:
            close_old_connections()

    def run_forever(self) -> None:
        """The ``agent_runner`` command: run until SIGTERM/SIGINT."""
        import signal

        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        self.start()
        from infra.maintenance import start_maintenance_thread

        start_maintenance_thread()
        while not stop.wait(5):
            if not self.alive:
                logger.error("agent runner %s: a thread died; exiting", self.name)
                break
        self.stop(grace=settings.AGENT_RUNNER_SHUTDOWN_GRACE)

    # --- rounds -------------------------------------------------------------------------

    def submit(self, turn_id: int) -> None:
        """Thread-safe; blocks while the runner is at capacity (back-pressure on the queue)."""
        while not self._slots.acquire(timeout=0.5):
            if self._stopping.is_set():
                return
        loop = self.loop
        if loop is None or self._stopping.is_set():
            self._slots.release()
            return
        loop.call_soon_threadsafe(self._spawn, turn_id)

    def try_submit(self, turn_id: int) -> bool:
        """Thread-safe and non-blocking: take the round if a slot is free now (embedded mode
        hands rounds to its in-process runner this way; the queue takes the rest)."""
        loop = self.loop
        if loop is None or self._stopping.is_set() or not self._slots.acquire(blocking=False):
            return False
        loop.call_soon_threadsafe(self._spawn, turn_id)
        return True

    def _spawn(self, turn_id: int) -> None:
        task = asyncio.get_running_loop().create_task(self._round(turn_id))
        self._tasks.add(task)
        task.add_done_callback(self._round_done)
        metrics.RUNNER_IN_FLIGHT.set(len(self._tasks))

    def _round_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        metrics.RUNNER_IN_FLIGHT.set(len(self._tasks))

    async def _round(self, turn_id: int) -> None:
        from chat_app.services.loop import round_run

        assert self.supervisor is not None
        try:
            with log_context(turn=turn_id):
                await round_run(turn_id, self.supervisor)
        except Exception:
            logger.exception("agent runner: round of turn %s crashed", turn_id)
        finally:
            self._slots.release()

    async def _shutdown(self, grace: float) -> None:
        deadline = time.monotonic() + grace
        while self._tasks and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        if self.supervisor is not None:
            self.supervisor.stop_all("shutdown")
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=30)
        if self.supervisor is not None:
            await self.supervisor.aclose()

    # --- threads ------------------------------------------------------------------------

    def _run_loop(self) -> None:
        loop = new_event_loop()  # uvloop where installed (infra.event_loop)
        asyncio.set_event_loop(loop)
        loop.set_default_executor(
            ThreadPoolExecutor(max_workers=self.db_threads, thread_name_prefix="agent-db")
        )
        self.loop = loop
        self.supervisor = RoundSupervisor(name=self.name)
        loop.call_soon(self._ready.set)
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()

    def _consume(self) -> None:
        from infra.celery_app import app

        with app.connection_for_read() as connection:
            self._consumer = _QueueConsumer(connection, self)
            if self._stopping.is_set():
                return
            try:
                self._consumer.run()
            except Exception:
                if not self._stopping.is_set():
                    logger.exception("agent runner: the queue consumer stopped")

    def _beat(self) -> None:
        """Report this runner alive every few seconds — but only while its event loop still
        answers: a wedged loop stops beating and its turns are reaped like a dead runner's."""
        from chat_app.services.runner_beats import BEAT_SECONDS, runner_beat
        from infra import liveness
        from infra.maintenance import close_connections_quietly

        while not self._stopping.wait(BEAT_SECONDS):
            loop = self.loop
            if loop is None or not loop.is_running():
                continue
            try:
                asyncio.run_coroutine_threadsafe(asyncio.sleep(0), loop).result(
                    timeout=LOOP_ANSWER_SECONDS
                )
            except Exception:
                logger.warning("agent runner %s: its event loop does not answer", self.name)
                continue
            liveness.touch("runner")  # the loop answers (the database may not)
            try:
                runner_beat(name=self.name, in_flight=self.in_flight, capacity=self.capacity)
            except Exception as exc:
                logger.warning("agent runner %s: could not report itself (%s)", self.name, exc)
            close_connections_quietly(f"agent runner {self.name}")


def run_round_once(turn_id: int) -> None:
    """A round outside any runner: what a plain Celery worker does with an ``agent_round``
    task it was told to consume (older deployments). Works, but holds a worker slot for the
    whole stream — run ``manage.py agent_runner`` instead."""

    async def main() -> None:
        from chat_app.services.loop import round_run

        supervisor = RoundSupervisor(name=f"celery@{socket.gethostname()}:{os.getpid()}")
        try:
            with log_context(turn=turn_id):
                await round_run(turn_id, supervisor)
        finally:
            await supervisor.aclose()

    asyncio.run(main())
