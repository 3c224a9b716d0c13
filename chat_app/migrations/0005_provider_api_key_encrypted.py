# Provider.api_key becomes an encrypted field; existing plain-text keys are encrypted in place.

from django.db import migrations

import infra.secrets


def encrypt_keys(apps, schema_editor):
    Provider = apps.get_model("chat_app", "Provider")
    for provider in Provider.objects.exclude(api_key=""):
        # Reading decrypts (a legacy plain value reads as itself); saving encrypts.
        Provider.objects.filter(pk=provider.pk).update(api_key=provider.api_key)


def decrypt_keys(apps, schema_editor):
    Provider = apps.get_model("chat_app", "Provider")
    table = schema_editor.quote_name(Provider._meta.db_table)
    with schema_editor.connection.cursor() as cursor:
        for provider in Provider.objects.exclude(api_key=""):
            cursor.execute(
                f"UPDATE {table} SET api_key = %s WHERE id = %s",  # noqa: S608
                [provider.api_key, provider.pk],
            )


class Migration(migrations.Migration):
    dependencies = [
        ("chat_app", "0004_runner_beats"),
    ]

    operations = [
        migrations.AlterField(
            model_name="provider",
            name="api_key",
            field=infra.secrets.EncryptedTextField(
                blank=True, default="", help_text="Encrypted at rest; write-only in forms."
            ),
        ),
        migrations.RunPython(encrypt_keys, decrypt_keys),
    ]
