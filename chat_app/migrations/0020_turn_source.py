from django.db import migrations, models


def sources_from_messages(apps, schema_editor):
    """Turns started by a schedule or as a subagent's task say so in their first message."""
    Turn = apps.get_model("chat_app", "Turn")
    Message = apps.get_model("chat_app", "Message")
    for origin, source in (("schedule", "schedule"), ("task", "subagent")):
        started = Message.objects.filter(origin=origin, turn__isnull=False).values("turn_id")
        Turn.objects.filter(pk__in=started).update(source=source)


class Migration(migrations.Migration):
    dependencies = [
        ("chat_app", "0019_message_attachments"),
    ]

    operations = [
        migrations.AddField(
            model_name="turn",
            name="source",
            field=models.CharField(
                choices=[
                    ("chat", "chat page"),
                    ("schedule", "schedule"),
                    ("subagent", "subagent"),
                    ("api", "API"),
                ],
                default="chat",
                max_length=10,
            ),
        ),
        migrations.RunPython(sources_from_messages, migrations.RunPython.noop),
    ]
