# The group every user belongs to without a membership row (platform_app/people/services.py:
# a user's groups are user.groups plus this one). Grants given to it are everyone's.

from django.db import migrations

EVERYONE = "Everyone"  # the same name as platform_app.people.services.EVERYONE


def create_everyone(apps, schema_editor):  # type: ignore[no-untyped-def]
    Group = apps.get_model("auth", "Group")
    Group.objects.get_or_create(name=EVERYONE)


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("platform", "0004_sso_identity"),
    ]

    # Going back leaves the group: grants and approver settings may name it by then.
    operations = [migrations.RunPython(create_everyone, migrations.RunPython.noop)]
