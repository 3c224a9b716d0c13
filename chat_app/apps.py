from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class ChatAppConfig(AppConfig):
    name = "chat_app"
    verbose_name = "Chat"

    def ready(self) -> None:
        from chat_app.agent_kinds import approved_call_hold
        from chat_app.models import Agent, ModelPrice, Provider
        from chat_app.pages import page_panels_register
        from chat_app.services.latent import latent_execute
        from chat_app.views_files import files_context
        from infra.maintenance import maintenance_step
        from tools_app.models import config_track
        from tools_app.registry import latent_executor_set
        from tools_app.services.approval import approved_call_hold_set
        from tools_app.signals import toolcall_finished

        toolcall_finished.connect(_advance_turn, dispatch_uid="chat_app.advance_turn")
        # The agent kind decides whether an approved call of a chat turn is held (a
        # clarification waits for the answer, like one that needed no approval).
        approved_call_hold_set(approved_call_hold)
        # A tool without an activity: the turn's model produces its output.
        latent_executor_set(latent_execute)
        # Model rounds keep agent, provider and price rows under the tool configuration's
        # token (tools_app.selectors.config_memo): a change to any of them moves it on.
        config_track(Agent, Provider, ModelPrice)
        maintenance_step("turns", _reap_turns, order=20)
        # SQLite drops a table's triggers when a migration rebuilds it: the conversation
        # search's are made again after every migrate (idempotent, no backfill).
        post_migrate.connect(_search_triggers, sender=self, dispatch_uid="chat_app.search")
        page_panels_register("files", files_context)  # the Files panel beside the chat


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
