"""Pinned definitions of imported tools (tools_app.services.pins): every source there is now
is pinned as it is — each stored function gets the sha256 of its canonical definition — as if
an admin had accepted it today. A source that never listed its tools pins its first listing."""

import hashlib
import json

from django.db import migrations, models
from django.utils import timezone

# A copy of tools_app.services.pins.definition/definition_pin as they are at this migration
# (a migration must not change when the app's code does).
KIND_FIELDS = {"openapi": ("method", "path", "params", "body")}


def _pin(function, kind):
    out = {
        "name": function.get("remote") or function.get("name") or "",
        "description": function.get("description") or "",
        "input_schema": function.get("input_schema") or {},
    }
    if function.get("annotations"):
        out["annotations"] = function["annotations"]
    for key in KIND_FIELDS.get(kind, ()):
        if key in function:
            out[key] = function[key]
    text = json.dumps(out, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def pin_existing(apps, schema_editor):
    ToolSource = apps.get_model("tools_app", "ToolSource")
    now = timezone.now()
    for source in ToolSource.objects.all():
        if not source.functions:
            continue
        source.functions = [{**f, "pin": _pin(f, source.kind)} for f in source.functions]
        source.pinned_at = now
        source.save(update_fields=["functions", "pinned_at"])


class Migration(migrations.Migration):
    dependencies = [
        ("tools_app", "0018_toolcall_imported"),
    ]

    operations = [
        migrations.AddField(
            model_name="toolsource",
            name="review",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name="toolsource",
            name="pinned_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="toolsource",
            name="auto_accept",
            field=models.BooleanField(
                default=False, help_text="Accept changed and new definitions without a review."
            ),
        ),
        migrations.AddField(
            model_name="toolsource",
            name="serve_pinned",
            field=models.BooleanField(
                default=False,
                help_text=(
                    "Keep calling changed functions with their pinned definition until reviewed."
                ),
            ),
        ),
        migrations.AlterField(
            model_name="auditrecord",
            name="kind",
            field=models.CharField(
                choices=[
                    ("call", "tool call"),
                    ("approval", "approval decision"),
                    ("settings", "settings change"),
                    ("people", "people change"),
                    ("read", "conversation read"),
                    ("quota", "quota refusal"),
                    ("definition", "tool definition"),
                ],
                default="call",
                max_length=10,
            ),
        ),
        migrations.RunPython(pin_existing, migrations.RunPython.noop),
    ]
