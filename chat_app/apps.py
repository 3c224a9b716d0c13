from typing import Any

from django.apps import AppConfig


class ChatAppConfig(AppConfig):
    name = "chat_app"
    verbose_name = "Chat"

    def ready(self) -> None:
        from chat_app.models import Agent, Provider
        from tools_app.models import config_track
        from tools_app.signals import toolcall_approved, toolcall_finished

        toolcall_finished.connect(_advance_turn, dispatch_uid="chat_app.advance_turn")
        toolcall_approved.connect(_hold_approved, dispatch_uid="chat_app.hold_approved")
        # Model rounds keep agent and provider rows under the tool configuration's token
        # (tools_app.selectors.config_memo): a change to either moves it on.
        config_track(Agent, Provider)


def _advance_turn(sender: object, call: object, **kwargs: object) -> None:
    from chat_app.services.turns import turn_advance

    turn_id = getattr(call, "turn_id", None)
    if turn_id is not None:
        turn_advance(turn_id)


def _hold_approved(sender: object, call: Any, **kwargs: object) -> bool:
    """An approved clarification of a chat turn waits for the answer, like one that needed no
    approval (``sgr.call_hold``), instead of running."""
    from chat_app.services import sgr

    return sgr.call_hold(call)
