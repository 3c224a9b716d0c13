from django.apps import AppConfig


class PlatformConfig(AppConfig):
    name = "tools_app.platform"
    label = "platform"
    verbose_name = "Platform tools (memory, schedules, subagents)"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from chat_app.signals import turn_finished, turn_stopping
        from tools_app.platform.subagents import subagent_parent_stopping, subagent_turn_finished

        turn_finished.connect(subagent_turn_finished, dispatch_uid="platform.subagent_finished")
        turn_stopping.connect(subagent_parent_stopping, dispatch_uid="platform.subagent_stopping")
