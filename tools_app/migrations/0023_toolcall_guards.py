from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("tools_app", "0022_standing_approvals")]

    operations = [
        migrations.AddField(
            model_name="toolcall",
            name="guards",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
