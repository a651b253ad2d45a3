"""``manage.py create_rig NAME --gpu "RTX 3090:24:2" …``: register a rig and
print its API token once (only the token's sha256 is stored)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.core.errors import ApplicationError
from leaderboard.results.models import Rig
from leaderboard.results.services.rigs import gpu_spec_parse, rig_create, rig_token_issue


class Command(BaseCommand):
    help = "Register a rig with its GPUs and print a new API token for it (shown once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument(
            "--gpu",
            action="append",
            default=[],
            metavar="MODEL[:VRAM_GB[:COUNT[:POWER_LIMIT_W]]]",
            help='A group of identical GPUs, e.g. "RTX 3090:24:2:350"; repeat for mixed rigs.',
        )
        parser.add_argument("--owner-name", default="")
        parser.add_argument("--cpu", default="")
        parser.add_argument("--cpu-cores", type=int, default=None)
        parser.add_argument("--ram-gb", type=float, default=None)
        parser.add_argument("--os", default="")
        parser.add_argument("--driver-version", default="")
        parser.add_argument("--cuda-version", default="")
        parser.add_argument("--label", default="", help="A note on the token, e.g. where it is used.")
        parser.add_argument(
            "--exists-ok",
            action="store_true",
            help="If the rig exists, leave it as it is and issue another token for it.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        name = options["name"].strip()
        if not name:
            raise CommandError("the rig name is empty")
        try:
            gpus = [gpu_spec_parse(text) for text in options["gpu"]]
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        rig = Rig.objects.filter(name=name).first()
        if rig is not None and not options["exists_ok"]:
            raise CommandError(f"a rig named {name!r} already exists (use --exists-ok to issue another token)")
        if rig is None:
            try:
                rig = rig_create(
                    name=name,
                    gpus=gpus,
                    owner_name=options["owner_name"],
                    cpu=options["cpu"],
                    cpu_cores=options["cpu_cores"],
                    ram_gb=options["ram_gb"],
                    os=options["os"],
                    driver_version=options["driver_version"],
                    cuda_version=options["cuda_version"],
                )
            except ApplicationError as exc:
                raise CommandError(exc.message) from exc
            self.stderr.write(f"Created rig {rig.name!r} ({rig.gpu_summary() or 'no GPUs'}).")
        _, raw = rig_token_issue(rig=rig, label=options["label"])
        self.stderr.write("API token (shown once; only its hash is stored):")
        # The token alone on stdout so scripts can capture it: TOKEN=$(manage.py create_rig …)
        self.stdout.write(raw)
