from django.apps import AppConfig


class ChatAppConfig(AppConfig):
    name = "chat_app"
    verbose_name = "Chat"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from chat_app.models import Agent, Provider
        from tools_app.signals import toolcall_finished

        toolcall_finished.connect(_advance_turn, dispatch_uid="chat_app.advance_turn")
        # Model rounds keep agent and provider rows under the tool configuration's token
        # (tools_app.selectors.config_memo): a change to either, from any process, moves it on.
        for model in (Agent, Provider):
            post_save.connect(
                _config_changed, sender=model, dispatch_uid=f"cc-chat-saved-{model.__name__}"
            )
            post_delete.connect(
                _config_changed, sender=model, dispatch_uid=f"cc-chat-deleted-{model.__name__}"
            )


def _config_changed(sender: object, **kwargs: object) -> None:
    from tools_app.models import ToolConfigVersion

    ToolConfigVersion.bump()


def _advance_turn(sender: object, call: object, **kwargs: object) -> None:
    from chat_app.services.turns import turn_advance

    turn_id = getattr(call, "turn_id", None)
    if turn_id is not None:
        turn_advance(turn_id)
