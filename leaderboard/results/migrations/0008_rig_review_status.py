# The review state on the rig itself (issue 21): whether the public may see a rig
# and everything hanging off it. Existing rigs are approved here; the community
# rigs among them get their review state from leaderboard.intake's migration 0002.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("results", "0007_summary_source_printed"),
    ]

    operations = [
        migrations.AddField(
            model_name="rig",
            name="review_status",
            field=models.CharField(
                choices=[("pending", "pending review"), ("approved", "approved"), ("rejected", "rejected")],
                default="approved",
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="rig",
            name="review_reason",
            field=models.TextField(blank=True, help_text="Shown to the owner (why it was rejected)."),
        ),
    ]
