from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("regressions", "0006_ab_confirmation_and_fanout"),
    ]

    operations = [
        migrations.AddField(
            model_name="buildrecord",
            name="subject",
            field=models.CharField(
                blank=True,
                help_text="The commit's subject (first line of its message), as the rig read it.",
                max_length=300,
            ),
        ),
    ]
