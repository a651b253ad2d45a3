"""``manage.py replay_releases --rig NAME --last 11434 --count 30``: replay a
window of llama.cpp releases on a rig through the nightly chain (services/replay.py)
and store it as that rig's timeline.

The rig's own worker builds and benchmarks each release (as for the nightly:
the service sends to ``rig.<name>``; start it with the rig's token and broker),
and the service's worker judges the reports; this command queues one release
after the other and waits for the chain to settle on each. Killed, it goes on
from where it stopped when run again with the same window (the window is the
replay's identity); ``--resend`` sends again the runs the rig never reported,
for a rig whose queue lost them.

The subscription (rig + repository + flags, following releases) is made the
first time with the reference configurations of ``--reference FILE.json`` (a
list of ``{"name", "spec"}``, the shape of the subscription page's), confirming
by A/B blocks and, unless ``--no-screen-every-step``, judging every release
step by them (services/confirmation.py); later runs use the subscription as it is.

Exit status: 0 when every release is settled, 3 when ``--timeout-s`` ran out
first (run it again to go on), 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.core.errors import ApplicationError
from leaderboard.regressions.models import (
    BuildRecord,
    Confirmation,
    ConfirmMode,
    Follows,
    ReferenceConfig,
    ReleaseSource,
    Replay,
    ReplayStepState,
    Subscription,
)
from leaderboard.regressions.replay_export import replay_document
from leaderboard.regressions.services.releases import ReleaseListErrors, release_list
from leaderboard.regressions.services.replay import replay_advance, replay_open, replay_resend
from leaderboard.regressions.words import verdict_words
from leaderboard.results.models import Rig
from runners.builds.releases import UPSTREAM_REPO, release_url
from runners.files import write_atomically


class Command(BaseCommand):
    help = "Replay a window of llama.cpp releases on a rig through the nightly chain (resumable)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--rig", required=True, help="the rig's name (registered, with a running worker)")
        parser.add_argument("--last", type=int, required=True, help="the newest release of the window (N of bN)")
        parser.add_argument("--count", type=int, default=30, help="how many releases, the newest last (default 30)")
        parser.add_argument("--first", type=int, help="the oldest release instead of --count")
        parser.add_argument("--repo", default=UPSTREAM_REPO)
        parser.add_argument("--source", choices=ReleaseSource.values, default=ReleaseSource.SDIST.value)
        parser.add_argument("--flags", default="", help="CMake flags of the rig's builds")
        parser.add_argument("--jobs", type=int, default=2, help="parallel compile jobs on the rig")
        parser.add_argument(
            "--screen-every-step",
            action=argparse.BooleanOptionalAction,
            default=True,
            help="A/B blocks judge every release step, not only those the first run calls a change (default: on)",
        )
        parser.add_argument("--reference", type=Path, help="JSON list of {name, spec}: a new subscription's configs")
        parser.add_argument("--label", default="", help="what the recording is: date, machine, load")
        parser.add_argument("--poll-s", type=float, default=10.0)
        parser.add_argument("--timeout-s", type=float, default=0, help="stop waiting after this long (0: never)")
        parser.add_argument("--resend", action="store_true", help="send again the runs the rig never reported")
        parser.add_argument("--json", type=Path, help="write the replay (rigboard-replay/1) here as releases settle")

    def handle(self, *args: Any, **options: Any) -> None:
        rig = Rig.objects.filter(name=options["rig"]).first()
        if rig is None:
            raise CommandError(f"--rig: no rig named {options['rig']!r}")
        sub = self._subscription(rig, options)
        try:
            known = sorted(release_list(subscription=sub))
        except ReleaseListErrors as exc:
            raise CommandError(f"the release list could not be read: {exc}") from exc
        window = self._window(known, options)
        try:
            replay = replay_open(subscription=sub, releases=window, label=options["label"])
        except ApplicationError as exc:
            raise CommandError(f"--{exc.field}: {exc.message}") from exc
        self.stdout.write(f"replay {replay.pk}: {len(window)} releases b{window[0]}..b{window[-1]} on {rig.name}")
        if options["resend"]:
            sent = replay_resend(replay=replay)
            self.stdout.write(f"sent again: {', '.join(b.commit for b in sent) or 'nothing'}")
        self._wait(replay, poll_s=options["poll_s"], timeout_s=options["timeout_s"], out=options["json"])

    def _subscription(self, rig: Rig, options: dict[str, Any]) -> Subscription:
        sub, created = Subscription.objects.get_or_create(
            rig=rig,
            repo_url=options["repo"],
            branch="master",
            build_flags=options["flags"],
            follows=Follows.RELEASES,
            defaults={
                "release_source": options["source"],
                "build_jobs": options["jobs"],
                "confirm_mode": ConfirmMode.BLOCKS,
                "screen_every_step": options["screen_every_step"],
            },
        )
        if created:
            if options["reference"] is None:
                sub.delete()
                raise CommandError("--reference: a new subscription needs its reference configurations")
            for entry in json.loads(options["reference"].read_text()):
                ReferenceConfig.objects.create(subscription=sub, name=entry["name"], spec=entry["spec"])
        elif sub.release_source != options["source"]:
            raise CommandError(f"--source: the subscription gets its releases by {sub.release_source}")
        elif sub.screen_every_step != options["screen_every_step"]:
            said = "--screen-every-step" if sub.screen_every_step else "--no-screen-every-step"
            raise CommandError(f"--screen-every-step: the subscription was made with {said}")
        return sub

    def _window(self, known: list[int], options: dict[str, Any]) -> list[int]:
        last, first, count = options["last"], options["first"], options["count"]
        if last not in known:
            raise CommandError(f"--last: b{last} is not a release the source knows (newest: b{known[-1]})")
        upto = [n for n in known if n <= last]
        window = [n for n in upto if n >= first] if first is not None else upto[-count:]
        if not window or count < 1:
            raise CommandError("--first/--count: the window holds no release")
        return window

    def _wait(self, replay: Replay, *, poll_s: float, timeout_s: float, out: Path | None) -> None:
        deadline = time.monotonic() + timeout_s if timeout_s else None
        reported: set[int] = set(replay.steps.filter(state=ReplayStepState.DONE).values_list("pk", flat=True))
        current = None
        while True:
            progress = replay_advance(replay=replay)
            for step in (
                replay.steps.filter(state=ReplayStepState.DONE).exclude(pk__in=reported).select_related("build")
            ):
                reported.add(step.pk)
                self.stdout.write(self._line(step.release, step.build))
                if out is not None:
                    write_atomically(out, json.dumps(replay_document(replay), indent=1))
            if progress.finished:
                if out is not None:
                    write_atomically(out, json.dumps(replay_document(replay), indent=1))
                self.stdout.write(f"replay {replay.pk} done: {progress.total} releases")
                return
            if progress.current is not None and progress.current.pk != current:
                current = progress.current.pk
                self.stdout.write(
                    f"b{progress.current.release}: waiting for the rig ({progress.done}/{progress.total})"
                )
            if deadline is not None and time.monotonic() > deadline:
                self.stdout.write("timed out waiting; run the same command again to go on")
                raise SystemExit(3)
            time.sleep(poll_s)

    @staticmethod
    def _line(release: int, build: BuildRecord | None) -> str:
        if build is None:
            return f"b{release}: no build"
        verdicts = ", ".join(
            f"{v.reference_config.name}: {v.get_kind_display()}"
            + (f" {v.effect_shown_pct:+.1f}%" if v.effect_shown_pct is not None else "")
            # The site's words: a screened step whose blocks agree is "no change by A/B blocks", never "reproduced".
            + (f" ({verdict_words(v).standing})" if v.confirmation else "")
            + (f"; first run {v.effect_pct:+.1f}%" if v.confirmation == Confirmation.AB_FOUND else "")
            + (f"; A/B {v.ab_effect_pct:+.1f}% (n {v.ab_n_pairs})" if v.ab_effect_pct is not None else "")
            for v in build.verdicts.select_related("reference_config")
        )
        times = [f"build {build.build_time_s:.0f} s" if build.build_time_s is not None else "build —"]
        times.append("cached" if build.cached else "")
        times.append(f"bench {build.bench_time_s:.0f} s" if build.bench_time_s is not None else "bench —")
        return (
            f"b{release}: {build.get_status_display()}; {', '.join(t for t in times if t)}; "
            f"{verdicts or 'no verdict'} ({release_url(release)})"
        )
