"""Fewer index entries for each bound call and its audit record (each is a page binding
writes). The person's own index on a call goes (``toolcall_user_created`` leads with the
same column); the decider's on a call, the conversation's and the group's on a record become
partial, covering only what they are looked up for (decided calls, conversation reads,
records that name no tool). Dropped by name, not by altering the fields, which on SQLite
would copy both tables, twice each."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

# Django's names for the fields' own indexes (the same on SQLite and PostgreSQL; PostgreSQL
# adds a ``_like`` index to an indexed CharField).
DROPPED = [
    # (table, index, column, PostgreSQL pattern-ops twin)
    ("tools_app_toolcall", "tools_app_toolcall_user_id_af72c2ae", "user_id", False),
    ("tools_app_toolcall", "tools_app_toolcall_decided_by_id_e53dd331", "decided_by_id", False),
    ("tools_app_auditrecord", "tools_app_auditrecord_conversation_id_fb32372f", "conversation_id", False),
    ("tools_app_auditrecord", "tools_app_auditrecord_group_9e66e54d", "group", True),
]


def drop(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for _table, index, _column, like in DROPPED:
            cursor.execute(f'DROP INDEX IF EXISTS "{index}"')
            if like:
                cursor.execute(f'DROP INDEX IF EXISTS "{index}_like"')


def restore(apps, schema_editor):
    postgresql = schema_editor.connection.vendor == "postgresql"
    with schema_editor.connection.cursor() as cursor:
        for table, index, column, like in DROPPED:
            cursor.execute(f'CREATE INDEX "{index}" ON "{table}" ("{column}")')
            if like and postgresql:
                cursor.execute(
                    f'CREATE INDEX "{index}_like" ON "{table}" ("{column}" varchar_pattern_ops)'
                )


def _user(**extra):
    return models.ForeignKey(
        blank=True,
        null=True,
        on_delete=django.db.models.deletion.SET_NULL,
        related_name="+",
        to=settings.AUTH_USER_MODEL,
        **extra,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("tools_app", "0016_research_sources"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField("toolcall", "user", _user(db_index=False)),
                migrations.AlterField("toolcall", "decided_by", _user(db_index=False)),
                migrations.AlterField(
                    "auditrecord",
                    "conversation_id",
                    models.BigIntegerField(blank=True, null=True),
                ),
                migrations.AlterField(
                    "auditrecord", "group", models.CharField(blank=True, max_length=64)
                ),
            ],
            database_operations=[migrations.RunPython(drop, restore)],
        ),
        migrations.AddIndex(
            model_name="toolcall",
            index=models.Index(
                condition=models.Q(("decided_by__isnull", False)),
                fields=["decided_by"],
                name="toolcall_decided_by",
            ),
        ),
        migrations.AddIndex(
            model_name="auditrecord",
            index=models.Index(
                condition=models.Q(("kind", "read")),
                fields=["conversation_id"],
                name="audit_read_conversation",
            ),
        ),
        migrations.AddIndex(
            model_name="auditrecord",
            index=models.Index(
                condition=models.Q(("tool", "")),
                fields=["group"],
                name="audit_toolless_group",
            ),
        ),
    ]
