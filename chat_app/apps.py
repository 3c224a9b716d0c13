from django.apps import AppConfig


class ChatAppConfig(AppConfig):
    name = "chat_app"
    verbose_name = "Chat"

    def ready(self) -> None:
        from tools_app.signals import toolcall_finished

        toolcall_finished.connect(_advance_turn, dispatch_uid="chat_app.advance_turn")


def _advance_turn(sender: object, call: object, **kwargs: object) -> None:
    from chat_app.services.turns import turn_advance

    turn_id = getattr(call, "turn_id", None)
    if turn_id is not None:
        turn_advance(turn_id)
