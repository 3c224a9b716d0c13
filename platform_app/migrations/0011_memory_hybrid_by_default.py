"""Hybrid memory search by default (issue 26): the Memory group's embedder becomes ``local``
where the stored settings still say ``none`` (the old default, which every save of the form
wrote whether or not an admin chose it). The chunks saved so far are embedded in the
background by the workers (``platform_app.memory.backfill``), looking for them by embedder:
hence the index."""

import uuid

from django.conf import settings
from django.db import migrations, models


def hybrid_by_default(apps, schema_editor):
    ToolGroupConfig = apps.get_model("tools_app", "ToolGroupConfig")
    ToolConfigVersion = apps.get_model("tools_app", "ToolConfigVersion")
    config = ToolGroupConfig.objects.filter(name="memory").first()
    if config is None or (config.settings or {}).get("embedder", "none") != "none":
        return
    config.settings = {**(config.settings or {}), "embedder": "local"}
    config.save(update_fields=["settings"])
    # Processes cache tool configuration under this token: they read the change at once.
    ToolConfigVersion.objects.update_or_create(pk=1, defaults={"token": uuid.uuid4().hex})


class Migration(migrations.Migration):
    dependencies = [
        ("platform", "0010_subagent_silent_and_log_only"),
        ("tools_app", "0012_approvals_by_approvers"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name="memorychunk",
            index=models.Index(fields=["embedder"], name="memorychunk_embedder"),
        ),
        migrations.RunPython(hybrid_by_default, migrations.RunPython.noop),
    ]
