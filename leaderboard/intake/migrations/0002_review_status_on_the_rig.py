# Move a community rig's review state from its ownership to the rig (issue 21), so
# that removing the ownership (or its owner) can no longer make a pending or
# rejected rig public: every rig takes its ownership's status and reason.

from django.db import migrations, models


def ownership_to_rig(apps, schema_editor):
    RigOwnership = apps.get_model("intake", "RigOwnership")
    Rig = apps.get_model("results", "Rig")
    for ownership in RigOwnership.objects.all().only("rig_id", "review_status", "review_reason"):
        Rig.objects.filter(pk=ownership.rig_id).update(
            review_status=ownership.review_status, review_reason=ownership.review_reason
        )


def rig_to_ownership(apps, schema_editor):
    RigOwnership = apps.get_model("intake", "RigOwnership")
    for ownership in RigOwnership.objects.select_related("rig"):
        ownership.review_status = ownership.rig.review_status
        ownership.review_reason = ownership.rig.review_reason
        ownership.save(update_fields=["review_status", "review_reason"])


class Migration(migrations.Migration):
    dependencies = [
        ("intake", "0001_intake_ownership_review"),
        ("results", "0008_rig_review_status"),
    ]

    operations = [
        migrations.RunPython(ownership_to_rig, rig_to_ownership),
        migrations.RemoveIndex(model_name="rigownership", name="ownership_queue_idx"),
        migrations.RemoveField(model_name="rigownership", name="review_status"),
        migrations.RemoveField(model_name="rigownership", name="review_reason"),
    ]
