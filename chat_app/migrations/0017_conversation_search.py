from django.db import migrations


def search_install(apps, schema_editor):
    from chat_app.services import search

    search.install(schema_editor.connection)


def search_remove(apps, schema_editor):
    from chat_app.services import search

    search.remove(schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [
        ("chat_app", "0016_conversation_pin_archive"),
        ("tools_app", "0010_approval_modes"),
    ]

    operations = [migrations.RunPython(search_install, search_remove)]
