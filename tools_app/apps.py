from django.apps import AppConfig


class ToolsAppConfig(AppConfig):
    name = "tools_app"
    verbose_name = "Tools"

    def ready(self) -> None:
        from tools_app import executors
        from tools_app.models import ToolFunctionConfig, ToolGroupConfig, config_track

        executors.load_all()
        # Processes cache tool configuration keyed by ToolConfigVersion (tools_app.selectors).
        config_track(ToolGroupConfig, ToolFunctionConfig)
