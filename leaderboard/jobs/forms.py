"""The admin's "queue benchmark job" form."""

from __future__ import annotations

from typing import Any

from django import forms

from leaderboard.jobs.models import JobKind
from leaderboard.results.models import Rig

# A starting point the form shows: attach to a server the rig already runs.
EXAMPLE_SPEC: dict[str, Any] = {
    "attach": {"url": "http://127.0.0.1:8080"},
    "workload": {"name": "space-invaders-html", "max_tokens": 2000, "repetitions": 10, "warmup": 1},
    "sweep": {"depths": [4096, 8192, 16384]},
}


class QueueJobForm(forms.Form):
    rig = forms.ModelChoiceField(queryset=Rig.objects.all())
    kind = forms.ChoiceField(choices=JobKind.choices, initial=JobKind.SUITE)
    spec = forms.JSONField(
        initial=EXAMPLE_SPEC,
        help_text=(
            "The runner config: [server] (launch llama-server: model, flags…) or [attach] (url), plus "
            "workload, sweep.depths, model, stack. The rig adds its own service URL and token."
        ),
        widget=forms.Textarea(attrs={"rows": 16, "cols": 90, "style": "font-family: monospace"}),
    )
    time_limit_s = forms.IntegerField(
        required=False, min_value=1, help_text="Hard time limit in seconds; empty: the service's default."
    )
