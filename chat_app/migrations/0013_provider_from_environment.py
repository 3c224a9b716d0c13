from django.db import migrations, models

# The name the environment-seeded provider was created under before it had a marker.
SEEDED_NAME = "default (from environment)"


def mark_seeded(apps, schema_editor):
    Provider = apps.get_model("chat_app", "Provider")
    Provider.objects.filter(name=SEEDED_NAME).update(from_environment=True)


class Migration(migrations.Migration):
    dependencies = [
        ("chat_app", "0012_agent_groups"),
    ]

    operations = [
        migrations.AddField(
            model_name="provider",
            name="from_environment",
            field=models.BooleanField(default=False, editable=False),
        ),
        migrations.RunPython(mark_seeded, migrations.RunPython.noop),
    ]
