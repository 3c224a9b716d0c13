"""Tool search (issue 38) for everyone: ``tool_search`` names only tools the person may already
use, so granting it changes no one's reach. Upgrades and fresh installs alike."""

from django.db import migrations

EVERYONE = "Everyone"  # tools_app.services.grants.EVERYONE


def grant(apps, schema_editor):  # type: ignore[no-untyped-def]
    Group = apps.get_model("auth", "Group")
    ToolGrant = apps.get_model("tools_app", "ToolGrant")
    everyone, _ = Group.objects.get_or_create(name=EVERYONE)
    ToolGrant.objects.get_or_create(group=everyone, kind="group", name="tool_search")


def ungrant(apps, schema_editor):  # type: ignore[no-untyped-def]
    ToolGrant = apps.get_model("tools_app", "ToolGrant")
    ToolGrant.objects.filter(group__name=EVERYONE, kind="group", name="tool_search").delete()


class Migration(migrations.Migration):
    dependencies = [("tools_app", "0026_policy_shadow")]

    operations = [migrations.RunPython(grant, ungrant)]
