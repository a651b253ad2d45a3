"""``manage.py import_community``: the public result sets in community_data/ as reported runs."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.results.services.community import CommunityDataError, community_import, community_sets


class Command(BaseCommand):
    help = (
        "Import the public result sets kept in leaderboard/results/community_data/ (geerlingguy/ai-benchmarks, "
        "XiongjieDai/GPU-Benchmarks-on-LLM-Inference) as reported runs citing their source row (idempotent)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--set", action="append", default=[], dest="only", help="import only this set (key)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            known = {s.key for s in community_sets()}
            unknown = sorted(set(options["only"]) - known)
            if unknown:
                raise CommandError(f"unknown set(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
            report = community_import(only=options["only"])
        except CommunityDataError as exc:
            raise CommandError(str(exc)) from exc
        for line in report.lines():
            self.stdout.write(line)
