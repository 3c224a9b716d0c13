from django.apps import AppConfig


class PlatformConfig(AppConfig):
    name = "tools_app.platform"
    label = "platform"
    verbose_name = "Platform tools (memory)"
    default_auto_field = "django.db.models.BigAutoField"
