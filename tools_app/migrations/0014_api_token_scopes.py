from django.db import migrations, models


def scopes_as_before(apps, schema_editor):
    """Tokens made before scopes existed could use /mcp/ and nothing else: they keep exactly
    that (their holders add more on the Tokens page)."""
    ApiToken = apps.get_model("tools_app", "ApiToken")
    ApiToken.objects.update(scopes=["mcp"])


class Migration(migrations.Migration):

    dependencies = [
        ("tools_app", "0013_tool_call_day_indexes_and_quota_audit"),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="scopes",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name="apitoken",
            name="rate_limit_per_minute",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="apitoken",
            name="trace",
            field=models.BooleanField(default=True),
        ),
        migrations.RunPython(scopes_as_before, migrations.RunPython.noop),
    ]
