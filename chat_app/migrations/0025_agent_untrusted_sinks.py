from django.db import migrations, models


class Migration(migrations.Migration):
    # Existing profiles get "approval" too (the field's default): on for every install.
    dependencies = [("chat_app", "0024_processbeat")]

    operations = [
        migrations.AddField(
            model_name="agent",
            name="untrusted_sinks",
            field=models.CharField(
                choices=[("approval", "Ask a person"), ("block", "Refuse"), ("off", "Off")],
                default="approval",
                help_text=(
                    "Once a web page, search result, document or imported tool's result "
                    "entered a turn, calls that send something out (an HTTP request with a "
                    "body, a message, a host-folder write, a container, a shell with network) "
                    "wait for a person or are refused."
                ),
                max_length=8,
            ),
        ),
    ]
