"""Explicit states (issue #34): a build run's role replaces ``confirms`` (and
the reverse ``as_pair_b``, ``run_commit`` and ``repeat`` it was read from), a
build run's status is a choice ("" becomes "queued"), and a build waiting on
its confirmation says so in its phase instead of in which rows exist. The data
step gives every existing row the state today's code infers for it, so stored
data keeps its meaning."""

from django.db import migrations, models

BUILD_STATUS_CHOICES = [
    ("queued", "Queued"),
    ("failed", "Build failed"),
    ("error", "Error (not the build's fault)"),
    ("benchmarked", "Benchmarked"),
    ("rerunning", "Benchmarked; re-running a change"),
    ("ab_pairs", "Benchmarked; running A/B pairs"),
]


def states_fill(apps, schema_editor):
    BuildRun = apps.get_model("regressions", "BuildRun")
    BuildRecord = apps.get_model("regressions", "BuildRecord")
    ConfirmationPair = apps.get_model("regressions", "ConfirmationPair")
    Verdict = apps.get_model("regressions", "Verdict")
    BuildRun.objects.filter(status="").update(status="queued")
    # A run's role, as services/detection.py's if-ladder read it.
    BuildRun.objects.filter(build__bisect_of__isnull=False).update(role="midpoint")
    BuildRun.objects.filter(repeat__gt=0, confirms=False).update(role="noise")
    BuildRun.objects.filter(confirms=True).update(role="rerun")
    BuildRun.objects.filter(pk__in=ConfirmationPair.objects.values("b_run_id")).update(role="ab_b")
    BuildRun.objects.filter(pk__in=ConfirmationPair.objects.values("a_run_id")).update(role="ab_a")
    BuildRun.objects.exclude(run_commit="").update(role="ab_a")
    # "built" was never assigned; a benchmarked build still waiting on its confirmation says so now.
    BuildRecord.objects.filter(status="built").update(status="benchmarked")
    with_pairs = ConfirmationPair.objects.values("build_id")
    pending = Verdict.objects.filter(confirmation="pending").values("build_id")
    benchmarked = BuildRecord.objects.filter(status="benchmarked")
    benchmarked.filter(pk__in=pending).exclude(pk__in=with_pairs).update(status="rerunning")
    benchmarked.filter(pk__in=pending, id__in=with_pairs).update(status="ab_pairs")
    # A fan-out build benchmarked without its verdict yet: its pairs are not all back.
    benchmarked.filter(fanout_of__isnull=False, verdicts__isnull=True).update(status="ab_pairs")


def states_unfill(apps, schema_editor):
    BuildRun = apps.get_model("regressions", "BuildRun")
    BuildRecord = apps.get_model("regressions", "BuildRecord")
    BuildRun.objects.filter(status="queued").update(status="")
    BuildRun.objects.filter(role__in=("rerun", "ab_a", "ab_b")).update(confirms=True)
    BuildRecord.objects.filter(status__in=("rerunning", "ab_pairs")).update(status="benchmarked")


class Migration(migrations.Migration):
    dependencies = [
        ("regressions", "0007_buildrecord_subject"),
    ]

    operations = [
        migrations.AddField(
            model_name="buildrun",
            name="failure_kind",
            field=models.CharField(
                blank=True, help_text="Why the run failed, as the rig named it (e.g. out_of_memory).", max_length=32
            ),
        ),
        migrations.AddField(
            model_name="buildrun",
            name="role",
            field=models.CharField(
                choices=[
                    ("judged", "The nightly run judged"),
                    ("noise", "A repeat measuring run-to-run noise"),
                    ("rerun", "A re-run confirming a change"),
                    ("ab_a", "A/B pair: the baseline build (A)"),
                    ("ab_b", "A/B pair: the candidate build (B)"),
                    ("midpoint", "A bisection midpoint's run"),
                ],
                default="judged",
                max_length=16,
            ),
        ),
        migrations.AlterField(
            model_name="buildrecord",
            name="status",
            field=models.CharField(choices=BUILD_STATUS_CHOICES, db_index=True, default="queued", max_length=16),
        ),
        migrations.AlterField(
            model_name="buildrun",
            name="status",
            field=models.CharField(
                choices=[("queued", "Awaiting the rig"), ("finished", "Finished"), ("failed", "Failed"), ("aborted", "Aborted")],
                default="queued",
                max_length=16,
            ),
        ),
        migrations.AlterField(
            model_name="verdict",
            name="confirmation",
            field=models.CharField(
                blank=True,
                choices=[
                    ("", "Not asked"),
                    ("pending", "Awaiting a re-run"),
                    ("confirmed", "Reproduced by a re-run"),
                    ("refuted", "Not reproduced by a re-run"),
                    ("unchecked", "Re-run failed; the first run stands"),
                    ("ab_confirmed", "Reproduced by A/B pairs"),
                    ("ab_refuted", "Not reproduced by A/B pairs"),
                ],
                max_length=16,
            ),
        ),
        migrations.RunPython(states_fill, states_unfill),
        migrations.RemoveField(
            model_name="buildrun",
            name="confirms",
        ),
    ]
