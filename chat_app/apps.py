from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models.signals import post_delete, post_migrate, post_save
from django.utils.translation import gettext as _


class ChatAppConfig(AppConfig):
    name = "chat_app"
    verbose_name = "Chat"

    def ready(self) -> None:
        from celery.signals import beat_init, worker_init

        from chat_app.agent_kinds import approved_call_hold
        from chat_app.models import Agent, ModelPrice, Provider
        from chat_app.pages import page_panels_register
        from chat_app.services.agents import agent_tool_limits
        from chat_app.services.latent import latent_execute
        from chat_app.services.process_beats import beat_started, worker_started
        from chat_app.services.turn_entries import turn_untrusted_entry
        from chat_app.views_files import files_context
        from infra.maintenance import maintenance_step
        from tools_app.guards.untrusted import turn_entry_register
        from tools_app.models import config_track
        from tools_app.registry import latent_executor_set
        from tools_app.services.approval import approved_call_hold_set
        from tools_app.services.narrowing import settings_narrowing_set
        from tools_app.signals import toolcall_finished

        toolcall_finished.connect(_advance_turn, dispatch_uid="chat_app.advance_turn")
        # The agent kind decides whether an approved call of a chat turn is held (a
        # clarification waits for the answer, like one that needed no approval).
        approved_call_hold_set(approved_call_hold)
        # A tool without an activity: the turn's model produces its output.
        latent_executor_set(latent_execute)
        # A call runs under its conversation's agent profile's lower limits (seed 004).
        settings_narrowing_set(agent_tool_limits)
        # Model rounds keep agent, provider and price rows under the tool configuration's
        # token (tools_app.selectors.config_memo): a change to any of them moves it on.
        config_track(Agent, Provider, ModelPrice)
        maintenance_step("turns", _reap_turns, order=20)
        # SQLite drops a table's triggers when a migration rebuilds it: the conversation
        # search's are made again after every migrate (idempotent, no backfill).
        post_migrate.connect(_search_triggers, sender=self, dispatch_uid="chat_app.search")
        page_panels_register("files", files_context)  # the Files panel beside the chat
        # Uploads and subagents' answers enter a turn with its messages: after them, a sink
        # call waits for a person like after a fetched page (tools_app.guards.untrusted).
        turn_entry_register(turn_untrusted_entry)
        # Celery workers and beat report themselves like the web process and the runner
        # (distributed mode): their health commands and everyone's readiness read it.
        worker_init.connect(worker_started, weak=False, dispatch_uid="chat_app.process_beat")
        beat_init.connect(beat_started, weak=False, dispatch_uid="chat_app.process_beat_beat")
        # A deactivated (or deleted) account: its running turns stop and its open sockets
        # close at once, whatever deactivated it (the People page, the admin, a command).
        user_model = get_user_model()
        post_save.connect(_person_saved, sender=user_model, dispatch_uid="chat_app.person_saved")
        post_delete.connect(
            _person_deleted, sender=user_model, dispatch_uid="chat_app.person_deleted"
        )


def _person_saved(sender: object, instance: Any, **kwargs: object) -> None:
    if not instance.is_active:
        _person_ended(instance.pk, _("your account has been deactivated"))


def _person_deleted(sender: object, instance: Any, **kwargs: object) -> None:
    _person_ended(instance.pk, _("your account has been removed"))


def _person_ended(user_id: int, reason: str) -> None:
    from chat_app.services.turns import person_turns_stop
    from infra.events import PERSON_ENDED, person_group, publish

    def end() -> None:
        person_turns_stop(user_id=user_id)
        publish([person_group(user_id)], {"type": PERSON_ENDED, "reason": reason}, wait=False)

    transaction.on_commit(end)


def _advance_turn(sender: object, call: Any, **kwargs: object) -> None:
    from chat_app.services.turns import turn_advance

    turn_id = getattr(call, "turn_id", None)
    if turn_id is not None:
        turn_advance(turn_id)


def _search_triggers(using: str = "default", **kwargs: object) -> None:
    from django.db import connections
    from django.db.migrations.recorder import MigrationRecorder

    from chat_app.services import search

    connection = connections[using]
    recorder = MigrationRecorder(connection)
    if (
        recorder.has_table()
        and ("chat_app", "0017_conversation_search") in recorder.applied_migrations()
    ):
        search.install(connection, backfill=False)


def _reap_turns() -> None:
    from chat_app.services.reaper import turns_reap_lost

    turns_reap_lost()
