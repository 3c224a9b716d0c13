"""Subagents: ``silent`` (the helper had nothing to report), and ``inject_into`` null now
means "only logged" (seed 002). Helpers still running were spawned when null meant the parent
conversation: they keep delivering there."""

from django.db import migrations, models
from django.db.models import F


def running_keep_their_parent(apps, schema_editor):
    Subagent = apps.get_model("platform", "Subagent")
    Subagent.objects.filter(
        status="running", inject_into__isnull=True, parent_conversation__isnull=False
    ).update(inject_into=F("parent_conversation"))


class Migration(migrations.Migration):
    dependencies = [("platform", "0009_user_language")]

    operations = [
        migrations.AddField(
            model_name="subagent",
            name="silent",
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(running_keep_their_parent, migrations.RunPython.noop),
    ]
