from django.db import migrations, models

import chat_app.models

OLD_BUDGETS = {"clarification": 2, "web_search": 8}
NEW_BUDGETS = {"clarification": 3, "web_search": 4}
LAST_LINE = (
    "Never invent sources. When the budget of iterations runs out, finish with what you have."
)
WARNINGS = """Research warnings (seed 004):
- Search snippets often hold the direct answer: read them carefully. For dates and numbers,
  put the year or period in the query.
- A page you read may show figures for OTHER years or periods than the question asks: check
  that what you take from it matches the question's time.
- When a page contradicts the search snippet on a fact, prefer the snippet; cross-check dates
  and numbers from pages against the snippets.
"""


def researcher_as_the_seed_says(apps, schema_editor):
    """The shipped Researcher, where nobody changed what this touches: seed 004's budgets
    (3 clarifications, 4 searches) and its research warnings in the prompt."""
    Agent = apps.get_model("chat_app", "Agent")
    for agent in Agent.objects.filter(name="Researcher"):
        changed = []
        if agent.tool_budgets == OLD_BUDGETS:
            agent.tool_budgets = NEW_BUDGETS
            changed.append("tool_budgets")
        prompt = agent.system_prompt
        if prompt.endswith(LAST_LINE) and "Research warnings" not in prompt:
            agent.system_prompt = prompt[: -len(LAST_LINE)] + WARNINGS + LAST_LINE
            changed.append("system_prompt")
        if changed:
            agent.save(update_fields=changed)


class Migration(migrations.Migration):
    dependencies = [
        ("chat_app", "0030_member_agents_and_prompts"),
    ]

    operations = [
        migrations.AddField(
            model_name="agent",
            name="tool_limits",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text='Lower limits of tool groups for this agent, e.g. {"research": '
                '{"max_results": 5, "max_chars_per_page": 1500}}; the Tools Manager\'s limits '
                "still cap them.",
                validators=[chat_app.models.validate_tool_limits],
            ),
        ),
        migrations.RunPython(researcher_as_the_seed_says, migrations.RunPython.noop),
    ]
