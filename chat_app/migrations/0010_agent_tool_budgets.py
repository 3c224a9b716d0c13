# Per-tool budgets become data: the two counted-tool columns (max_clarifications,
# max_searches) are folded into one JSON field, tool name → calls per turn (0 meant no limit:
# such a tool is left out).

import chat_app.models
from django.db import migrations, models

COLUMNS = {"max_clarifications": "clarification", "max_searches": "web_search"}


def columns_to_budgets(apps, schema_editor):  # type: ignore[no-untyped-def]
    Agent = apps.get_model("chat_app", "Agent")
    for agent in Agent.objects.all():
        agent.tool_budgets = {
            tool: getattr(agent, column) for column, tool in COLUMNS.items() if getattr(agent, column)
        }
        agent.save(update_fields=["tool_budgets"])


def budgets_to_columns(apps, schema_editor):  # type: ignore[no-untyped-def]
    Agent = apps.get_model("chat_app", "Agent")
    for agent in Agent.objects.all():
        budgets = agent.tool_budgets or {}
        for column, tool in COLUMNS.items():
            setattr(agent, column, budgets.get(tool, 0))
        agent.save(update_fields=list(COLUMNS))


class Migration(migrations.Migration):

    dependencies = [
        ('chat_app', '0009_provider_allowed_models'),
    ]

    operations = [
        migrations.AddField(
            model_name='agent',
            name='tool_budgets',
            field=models.JSONField(blank=True, default=chat_app.models.default_tool_budgets, help_text='Calls per turn of a tool, by name, e.g. {"web_search": 8, "clarification": 2}; a tool not listed (or 0) has no limit. At the limit the tool is no longer offered. Not counted for a tool-calling profile with every tool.', validators=[chat_app.models.validate_tool_budgets]),
        ),
        migrations.RunPython(columns_to_budgets, budgets_to_columns),
        migrations.RemoveField(
            model_name='agent',
            name='max_clarifications',
        ),
        migrations.RemoveField(
            model_name='agent',
            name='max_searches',
        ),
    ]
