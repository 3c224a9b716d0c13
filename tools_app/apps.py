from typing import Any

from django.apps import AppConfig


class ToolsAppConfig(AppConfig):
    name = "tools_app"
    verbose_name = "Tools"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from tools_app import executors
        from tools_app.models import ToolFunctionConfig, ToolGroupConfig

        executors.load_all()
        # Processes cache tool configuration keyed by ToolConfigVersion (tools_app.selectors):
        # every save or delete of it, from any process, moves the version on.
        for model in (ToolGroupConfig, ToolFunctionConfig):
            post_save.connect(
                _config_changed, sender=model, dispatch_uid=f"cc-config-saved-{model.__name__}"
            )
            post_delete.connect(
                _config_changed, sender=model, dispatch_uid=f"cc-config-deleted-{model.__name__}"
            )


def _config_changed(sender: Any, **kwargs: Any) -> None:
    from tools_app.models import ToolConfigVersion

    ToolConfigVersion.bump()
