"""Nightly regression tracking: the chain, one module per step.

::

    report ──▶ judge ──▶ confirm ──────────────▶ act ──────────────────▶ report page
    (rig)      (one run   (A/B blocks or pairs,   (alert, fan-out, bisect)  (matrix, timeline,
               vs its     or re-run)                                         regression report)
               baseline)

1. **Dispatch** — services/detection.py finds a new branch head, queues the
   build with its runs (roles: states.BuildRunRole) and sends the dispatch
   spec (runners/delivery/nightly_schema.py) to the rig's queue; the rig
   (runners/builds/nightly.py) builds, benchmarks and sends back its build report.
2. **Report** — services/builds.py records the report and moves the chain on
   by the build's phase (states.BuildStatus).
3. **Judge** — services/verdicts.py judges each run against its baseline run
   on the raw samples (the rule: verdict.py).
4. **Confirm** — services/confirmation.py holds a change pending and routes it
   to services/verdict_blocks.py (the default: interleaved blocks of baseline
   and candidate on the rig's A/B task, judged batch by batch as reported; the
   rule: ab_blocks.py, or ab.py where the rig fell back to run-level pairs),
   services/ab_confirmation.py (run-level ABBA pairs of runs; the rule: ab.py)
   or services/rerun.py (re-runs of the candidate). What it sends leaves
   through one seam per kind: sent after commit, or, when the broker is down,
   settled as unchecked and acted on.
5. **Act** — services/confirmation.py ``standing_changes_act_on``: a
   regression that stands is alerted (services/alerts.py), fanned out to the
   branch's other rigs (services/fanout.py) when A/B confirmed, and bisected
   (services/bisect.py) if the subscription says so.
6. **Pages** — matrix.py (commit × rig), selectors.py + charts.py (one
   timeline), report.py + report_md.py (the regression report upstream can
   act on). How a verdict stands is said in words by words.py, for every page
   and the alert alike.

The states — a build's phase, a build run's role and status, a verdict's
confirmation — and their only allowed moves are in states.py."""
