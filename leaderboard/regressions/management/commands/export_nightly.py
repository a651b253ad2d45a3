"""``manage.py export_nightly --subscription ID|--rig NAME --runs-dir DIR --out FILE``: a
subscription's settled timeline as a recording (``rigboard-nightly/1``,
regressions/timeline_export.py) that ``manage.py import_nightly`` stores on
another database, judged again there. ``--runs-dir``: where the rig's worker
kept the run documents it posted (``RIGBOARD_RUNS_DIR``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.core.errors import ApplicationError
from leaderboard.regressions.models import Subscription
from leaderboard.regressions.timeline_export import timeline_document
from runners.files import write_atomically


class Command(BaseCommand):
    help = "Write a subscription's settled timeline as a recording (rigboard-nightly/1) for import_nightly."

    def add_arguments(self, parser: CommandParser) -> None:
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--subscription", type=int, help="the subscription's id")
        which.add_argument("--rig", help="the rig's name, for a rig with one subscription")
        parser.add_argument("--runs-dir", type=Path, required=True, help="the rig's copies of its run documents")
        parser.add_argument("--out", type=Path, required=True, help="the recording to write (JSON)")
        parser.add_argument("--recorded-on", default="", help="the machine, in words (its CPU, cores, load)")

    def _subscription(self, options: dict[str, Any]) -> Subscription:
        if options["rig"]:
            found = list(Subscription.objects.filter(rig__name=options["rig"]))
            if len(found) != 1:
                raise CommandError(
                    f"--rig: {options['rig']!r} has {len(found)} subscriptions; name one with --subscription"
                )
            return found[0]
        subscription = Subscription.objects.filter(pk=options["subscription"]).first()
        if subscription is None:
            raise CommandError(f"--subscription: no subscription {options['subscription']}")
        return subscription

    def handle(self, *args: Any, **options: Any) -> None:
        subscription = self._subscription(options)
        if not options["runs_dir"].is_dir():
            raise CommandError(f"--runs-dir: no directory {options['runs_dir']}")
        try:
            document = timeline_document(subscription, runs_dir=options["runs_dir"], recorded_on=options["recorded_on"])
        except ApplicationError as exc:
            raise CommandError(f"{exc.field}: {exc.message}") from exc
        write_atomically(options["out"], json.dumps(document, indent=1))
        self.stdout.write(f"{options['out']}: {len(document['builds'])} builds, {len(document['runs'])} run documents")
