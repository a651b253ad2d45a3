# The run-to-run spread of each rig × configuration group kept beside the runs (issue 24):
# a rig page read it from an aggregate over all the rig's measured runs (607 ms p95 for a
# 170k-run rig at a million runs). On PostgreSQL a statement-level trigger on results_run
# keeps them in the writing statement's transaction (new runs add to their group's sums,
# an update or delete recomputes the groups it touched from their runs); the plain
# reference is boards/selectors/noise.spread_rows_from_runs (tests/boards/test_spread_summary.py).
# Elsewhere (SQLite) no trigger is made and the page aggregates the runs.

import django.db.models.deletion
from django.db import migrations, models

# A run counts towards its group's spread when it is finished with a median from raw samples.
_MEASURED = "{t}.status = 'finished' AND {t}.summary_source = 'samples' AND {t}.decode_tokens_per_s_median IS NOT NULL"
_GROUP = "rig_id, stack_id, model_file_id, configuration_id, workload_id"

_FUNCTION = f"""
CREATE FUNCTION results_runspread_refresh() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    rigs bigint[]; stacks bigint[]; model_files bigint[]; configurations bigint[]; workloads bigint[];
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM results_runspread;
        RETURN NULL;
    END IF;
    -- New runs add to their groups' sums (no read of the runs; the row lock ON CONFLICT
    -- takes serialises concurrent writers of a group, and each adds to what the other left).
    IF TG_OP = 'INSERT' THEN
        INSERT INTO results_runspread AS s
            ({_GROUP}, n, any_run_id, mean, sumsq, n_log, sum_logs, sum_log_squares, lo, hi)
        SELECT {_GROUP}, count(id), max(id), avg(m), sum(m * m), count(id) FILTER (WHERE m > 0),
               sum(ln(m)) FILTER (WHERE m > 0), sum(ln(m) * ln(m)) FILTER (WHERE m > 0), min(m), max(m)
          FROM (SELECT n.*, n.decode_tokens_per_s_median AS m FROM new_rows n
                 WHERE {_MEASURED.format(t="n")}) n
         GROUP BY {_GROUP} ORDER BY {_GROUP}
        ON CONFLICT ({_GROUP}) DO UPDATE SET
            n = s.n + excluded.n,
            any_run_id = greatest(s.any_run_id, excluded.any_run_id),
            mean = (s.mean * s.n + excluded.mean * excluded.n) / (s.n + excluded.n),
            sumsq = s.sumsq + excluded.sumsq,
            n_log = s.n_log + excluded.n_log,
            sum_logs = CASE WHEN s.n_log + excluded.n_log > 0
                            THEN coalesce(s.sum_logs, 0) + coalesce(excluded.sum_logs, 0) END,
            sum_log_squares = CASE WHEN s.n_log + excluded.n_log > 0
                                   THEN coalesce(s.sum_log_squares, 0) + coalesce(excluded.sum_log_squares, 0) END,
            lo = least(s.lo, excluded.lo),
            hi = greatest(s.hi, excluded.hi);
        RETURN NULL;
    END IF;
    -- An update or a delete may take a run out of a group: its groups are read again
    -- from their runs, in key order (the order their rows are locked in).
    IF TG_OP = 'DELETE' THEN
        SELECT array_agg(k.rig_id), array_agg(k.stack_id), array_agg(k.model_file_id),
               array_agg(k.configuration_id), array_agg(k.workload_id)
          INTO rigs, stacks, model_files, configurations, workloads
          FROM (SELECT DISTINCT {_GROUP} FROM old_rows o WHERE {_MEASURED.format(t="o")} ORDER BY {_GROUP}) k;
    ELSE
        -- An update counts only where it changed what a spread reads (most change nothing:
        -- a run's notes, its updated_at), on the run's group before and after.
        SELECT array_agg(k.rig_id), array_agg(k.stack_id), array_agg(k.model_file_id),
               array_agg(k.configuration_id), array_agg(k.workload_id)
          INTO rigs, stacks, model_files, configurations, workloads
          FROM (
            SELECT DISTINCT g.* FROM new_rows n JOIN old_rows o ON o.id = n.id
            CROSS JOIN LATERAL (VALUES
                (n.rig_id, n.stack_id, n.model_file_id, n.configuration_id, n.workload_id),
                (o.rig_id, o.stack_id, o.model_file_id, o.configuration_id, o.workload_id)
            ) AS g(rig_id, stack_id, model_file_id, configuration_id, workload_id)
            WHERE (n.rig_id, n.stack_id, n.model_file_id, n.configuration_id, n.workload_id,
                   n.status, n.summary_source, n.decode_tokens_per_s_median)
                  IS DISTINCT FROM
                  (o.rig_id, o.stack_id, o.model_file_id, o.configuration_id, o.workload_id,
                   o.status, o.summary_source, o.decode_tokens_per_s_median)
              AND (({_MEASURED.format(t="n")}) OR ({_MEASURED.format(t="o")}))
            ORDER BY 1, 2, 3, 4, 5
          ) k;
    END IF;
    IF rigs IS NULL THEN
        RETURN NULL;
    END IF;
    -- Each group's row, made when missing, is locked before its runs are read: a
    -- concurrent writer of the same group waits here, and the next statement's
    -- snapshot (READ COMMITTED) then holds that writer's runs too.
    INSERT INTO results_runspread AS s
        ({_GROUP}, n, any_run_id, mean, sumsq, n_log, lo, hi)
    SELECT k.*, 0, 0, 0, 0, 0, 0, 0
      FROM unnest(rigs, stacks, model_files, configurations, workloads) AS k({_GROUP})
    ON CONFLICT ({_GROUP}) DO UPDATE SET n = s.n;
    -- The same aggregates as the plain path, over the group's measured runs (run_spread_idx).
    UPDATE results_runspread s
       SET n = a.n, any_run_id = a.any_run_id, mean = a.mean, sumsq = a.sumsq, n_log = a.n_log,
           sum_logs = a.sum_logs, sum_log_squares = a.sum_log_squares, lo = a.lo, hi = a.hi
      FROM (
        SELECT k.rig_id, k.stack_id, k.model_file_id, k.configuration_id, k.workload_id,
               count(r.id) AS n, coalesce(max(r.id), 0) AS any_run_id,
               coalesce(avg(r.decode_tokens_per_s_median), 0) AS mean,
               coalesce(sum(r.decode_tokens_per_s_median * r.decode_tokens_per_s_median), 0) AS sumsq,
               count(r.id) FILTER (WHERE r.decode_tokens_per_s_median > 0) AS n_log,
               sum(ln(r.decode_tokens_per_s_median)) FILTER (WHERE r.decode_tokens_per_s_median > 0) AS sum_logs,
               sum(ln(r.decode_tokens_per_s_median) * ln(r.decode_tokens_per_s_median))
                   FILTER (WHERE r.decode_tokens_per_s_median > 0) AS sum_log_squares,
               coalesce(min(r.decode_tokens_per_s_median), 0) AS lo,
               coalesce(max(r.decode_tokens_per_s_median), 0) AS hi
          FROM unnest(rigs, stacks, model_files, configurations, workloads) AS k({_GROUP})
          LEFT JOIN results_run r
            ON (r.rig_id, r.stack_id, r.model_file_id, r.configuration_id, r.workload_id)
             = (k.rig_id, k.stack_id, k.model_file_id, k.configuration_id, k.workload_id)
           AND {_MEASURED.format(t="r")}
         GROUP BY k.rig_id, k.stack_id, k.model_file_id, k.configuration_id, k.workload_id
      ) a
     WHERE (s.rig_id, s.stack_id, s.model_file_id, s.configuration_id, s.workload_id)
         = (a.rig_id, a.stack_id, a.model_file_id, a.configuration_id, a.workload_id);
    DELETE FROM results_runspread s
     USING unnest(rigs, stacks, model_files, configurations, workloads) AS k({_GROUP})
     WHERE (s.rig_id, s.stack_id, s.model_file_id, s.configuration_id, s.workload_id)
         = (k.rig_id, k.stack_id, k.model_file_id, k.configuration_id, k.workload_id)
       AND s.n = 0;
    RETURN NULL;
END
$fn$;
CREATE TRIGGER results_run_spread_insert AFTER INSERT ON results_run
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION results_runspread_refresh();
CREATE TRIGGER results_run_spread_update AFTER UPDATE ON results_run
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION results_runspread_refresh();
CREATE TRIGGER results_run_spread_delete AFTER DELETE ON results_run
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION results_runspread_refresh();
CREATE TRIGGER results_run_spread_truncate AFTER TRUNCATE ON results_run
    FOR EACH STATEMENT EXECUTE FUNCTION results_runspread_refresh();
"""


# The groups already stored: run when the triggers are made, and by a bulk loader that wrote
# runs with triggers off (benchmarks/site_load.py).
BACKFILL = f"""
INSERT INTO results_runspread ({_GROUP}, n, any_run_id, mean, sumsq, n_log, sum_logs, sum_log_squares, lo, hi)
SELECT {_GROUP}, count(id), max(id), avg(decode_tokens_per_s_median),
       sum(decode_tokens_per_s_median * decode_tokens_per_s_median),
       count(id) FILTER (WHERE decode_tokens_per_s_median > 0),
       sum(ln(decode_tokens_per_s_median)) FILTER (WHERE decode_tokens_per_s_median > 0),
       sum(ln(decode_tokens_per_s_median) * ln(decode_tokens_per_s_median))
           FILTER (WHERE decode_tokens_per_s_median > 0),
       min(decode_tokens_per_s_median), max(decode_tokens_per_s_median)
  FROM results_run r WHERE {_MEASURED.format(t="r")}
 GROUP BY {_GROUP};
"""

_DROP = """
DROP TRIGGER results_run_spread_insert ON results_run;
DROP TRIGGER results_run_spread_update ON results_run;
DROP TRIGGER results_run_spread_delete ON results_run;
DROP TRIGGER results_run_spread_truncate ON results_run;
DROP FUNCTION results_runspread_refresh();
DELETE FROM results_runspread;
"""


def create_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(_FUNCTION + BACKFILL)


def drop_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(_DROP)


class Migration(migrations.Migration):
    dependencies = [
        ("results", "0009_run_spread_and_model_date_indexes"),
    ]

    operations = [
        migrations.CreateModel(
            name="RunSpread",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("n", models.PositiveIntegerField(help_text="Measured runs in the group.")),
                (
                    "any_run_id",
                    models.BigIntegerField(help_text="The highest run id of the group: its catalog rows name it."),
                ),
                ("mean", models.FloatField(help_text="Mean of the runs' decode t/s medians.")),
                ("sumsq", models.FloatField(help_text="Σ median².")),
                (
                    "n_log",
                    models.PositiveIntegerField(help_text="Runs with a median above 0 (the log-scale sums' count)."),
                ),
                ("sum_logs", models.FloatField(help_text="Σ ln(median) over those.", null=True)),
                ("sum_log_squares", models.FloatField(help_text="Σ ln(median)² over those.", null=True)),
                ("lo", models.FloatField(help_text="Lowest median.")),
                ("hi", models.FloatField(help_text="Highest median.")),
                (
                    "configuration",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="results.configuration"
                    ),
                ),
                (
                    "model_file",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="results.modelfile"
                    ),
                ),
                (
                    "rig",
                    models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+", to="results.rig"),
                ),
                (
                    "stack",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="results.stack"
                    ),
                ),
                (
                    "workload",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="results.workload"
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(
                        models.F("rig"),
                        models.OrderBy(models.F("n"), descending=True),
                        models.OrderBy(models.F("mean"), descending=True),
                        models.F("stack"),
                        models.F("model_file"),
                        models.F("configuration"),
                        models.F("workload"),
                        condition=models.Q(("n__gte", 2)),
                        name="run_spread_rig_rank_idx",
                    )
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("rig", "stack", "model_file", "configuration", "workload"),
                        name="uniq_run_spread_group",
                    )
                ],
            },
        ),
        migrations.RunPython(create_trigger, drop_trigger),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                models.F("rig"),
                models.OrderBy(models.F("decode_tokens_per_s_mean"), descending=True),
                models.OrderBy(models.F("id"), descending=True),
                condition=models.Q(("decode_tokens_per_s_mean__isnull", False), ("status", "finished")),
                name="run_rig_rank_idx",
            ),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                condition=models.Q(("cost_usd_per_mtok__isnull", False)),
                fields=["cost_usd_per_mtok"],
                name="run_published_cost_idx",
            ),
        ),
    ]
