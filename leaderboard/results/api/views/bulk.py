"""POST /api/runs/bulk/: many runs of the token's rig in one request, each answered on its own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response

from leaderboard.results.api.batch import BulkJSONParser, runs_submit
from leaderboard.results.api.views.base import ApiMixin, APIView
from leaderboard.results.models import RigToken
from leaderboard.results.services.bulk import CREATED, REFUSED, STORED, BulkRunOutcome

# The request as OpenAPI describes it: a list of the run's one schema, the
# component POST /api/runs/ takes (each run is checked on its own: api/batch.py).
_REQUEST = {
    "type": "object",
    "description": "Runs of the token's rig, each a POST /api/runs/ body (its rig may be left out).",
    "properties": {
        "runs": {
            "type": "array",
            "minItems": 1,
            "description": "At most RIGBOARD_MAX_BULK_RUNS runs.",
            "items": {"$ref": "#/components/schemas/RunCreateInput"},
        }
    },
    "required": ["runs"],
}


class BulkRunOutputSerializer(serializers.Serializer):
    index = serializers.IntegerField(help_text="The run's position in the request, from 0.")
    uuid = serializers.UUIDField(allow_null=True)
    status = serializers.IntegerField(help_text="What POST /api/runs/ would answer: 201, 200, 400, 403 or 409.")
    result = serializers.ChoiceField(choices=[CREATED, STORED, REFUSED])
    url = serializers.CharField(required=False, help_text="The stored run (GET), unless refused.")
    # Named as the answer names it; this serializer only describes (never validates), so
    # shadowing Serializer.errors is harmless.
    errors = serializers.DictField(  # type: ignore[assignment]
        child=serializers.ListField(child=serializers.CharField()),
        required=False,
        help_text="When refused: runs.<index>.<field path> → why.",
    )


class BulkOutputSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    already_stored = serializers.IntegerField()
    refused = serializers.IntegerField()
    runs = BulkRunOutputSerializer(many=True)


def _outcome(outcome: BulkRunOutcome) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "index": outcome.index,
        "uuid": outcome.uuid,
        "status": outcome.status_code,
        "result": outcome.result,
    }
    if outcome.result == REFUSED:
        answer["errors"] = outcome.errors
    else:
        answer["url"] = f"/api/runs/{outcome.uuid}/"
    return answer


def _runs(data: Any) -> list[Any]:
    """Return the request's list of runs; raise a 400 naming ``runs`` when there is none to take."""
    if not isinstance(data, dict):
        raise exceptions.ValidationError(
            {"body": [f"Expected an object with a list of runs, got {type(data).__name__}."]}
        )
    runs = data.get("runs")
    if not isinstance(runs, list) or not runs:
        raise exceptions.ValidationError({"runs": ["Send a non-empty list of runs."]})
    longest = settings.RIGBOARD_MAX_BULK_RUNS
    if len(runs) > longest:
        raise exceptions.ValidationError(
            {"runs": [f"Ensure this field has no more than {longest} elements (RIGBOARD_MAX_BULK_RUNS)."]}
        )
    return runs


class RunBulkCreateApi(ApiMixin, APIView):
    """Submit many runs of the token's rig; each is checked, stored and answered as
    ``POST /api/runs/`` would, and a refused run does not stop the others."""

    parser_classes: Sequence[type[BaseParser]] = [BulkJSONParser]

    @extend_schema(
        operation_id="runs_bulk_create",
        request={"application/json": _REQUEST},
        responses={
            200: OpenApiResponse(BulkOutputSerializer, description="One answer per run, in the request's order."),
            400: OpenApiResponse(description='No list of runs, or too many: {"errors": {"runs": ["why"]}}'),
            401: OpenApiResponse(description="No valid rig token."),
            413: OpenApiResponse(description="The body is over RIGBOARD_MAX_BULK_BODY_BYTES."),
        },
    )
    def post(self, request: Request) -> Response:
        token = request.auth
        assert isinstance(token, RigToken)  # noqa: S101 - RigTokenOrReadOnly guarantees it
        runs = _runs(request.data)
        outcomes = runs_submit(rig=token.rig, documents=runs)
        counts = {result: sum(o.result == result for o in outcomes) for result in (CREATED, STORED, REFUSED)}
        return Response(
            {
                "created": counts[CREATED],
                "already_stored": counts[STORED],
                "refused": counts[REFUSED],
                "runs": [_outcome(o) for o in outcomes],
            }
        )
