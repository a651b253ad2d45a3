"""Runs: list, submit, read one, append samples to an open run, finish it."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.http import Http404
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import exceptions, generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.core.api.pagination import CursorOrPagePagination
from leaderboard.results import selectors
from leaderboard.results.api.filters import NullsLastOrderingFilter, RunFilter
from leaderboard.results.api.payloads import payload_validated
from leaderboard.results.api.permissions import token_rig_id, token_rig_name
from leaderboard.results.api.serializers import outputs
from leaderboard.results.api.views.base import ApiMixin, CompiledListMixin, schema_component
from leaderboard.results.models import RigToken, Run
from leaderboard.results.services.append import run_append
from leaderboard.results.services.runs import RunCreateResult, run_create_measured
from leaderboard.results.speedups.prefetch import attach_prefetched
from runners.delivery import schema

_ERRORS = {
    400: OpenApiResponse(description='Bad input: {"errors": {"field.path": ["why"]}}'),
    401: OpenApiResponse(description="No valid rig token."),
    403: OpenApiResponse(description="The token belongs to another rig."),
    413: OpenApiResponse(description="The body is over RIGBOARD_MAX_BODY_BYTES."),
}


def _detail(run_uuid: UUID | str, request: Request) -> dict[str, Any]:
    run = selectors.run_get(uuid=str(run_uuid), viewer=request.user, token_rig_id=token_rig_id(request))
    # None: no such run (or deleted between write and read), or a hidden rig's run
    # asked for by anyone but its own token: both answer 404.
    if run is None:
        raise Http404
    return outputs.represent(RunDetailApi.OutputSerializer, run)  # type: ignore[no-any-return]


def _created_detail(result: RunCreateResult) -> dict[str, Any]:
    """The detail of a run just created, from the objects run_create returned
    (its rig, catalog rows, samples and sweep points) rather than read back:
    the same document GET /api/runs/{uuid}/ gives, without its 5 queries."""
    run = result.run
    if result.rig_gpus is not None:
        attach_prefetched(run.rig, "gpus", result.rig_gpus)
    return outputs.represent(RunDetailApi.OutputSerializer, run)  # type: ignore[no-any-return]


class RunListApi(CompiledListMixin, ApiMixin, generics.ListAPIView):
    """List runs, filtered, ordered (nulls last) and paginated."""

    OutputSerializer = schema_component(outputs.RunListOutputSerializer, "RunListItem")

    serializer_class = OutputSerializer
    filterset_class = RunFilter
    filter_backends = [DjangoFilterBackend, NullsLastOrderingFilter]
    ordering_fields = [
        "created_at",
        "started_at",
        "finished_at",
        "decode_tokens_per_s_mean",
        "decode_tokens_per_s_median",
        "prefill_tokens_per_s_mean",
        "ttft_ms_mean",
        "acceptance_pct",
        "power_w_mean",
        "tokens_per_kwh",
    ]
    ordering = ["-created_at"]
    # Counting every public run on each request grew with the table (issue 24); ?cursor=
    # walks every public run once, in id order, for a script that mirrors the board.
    pagination_class = CursorOrPagePagination

    def get_queryset(self) -> Any:
        # Runs of community rigs awaiting review stay out of public lists (leaderboard/intake).
        return selectors.run_list_public()


class RunCreateApi(ApiMixin, APIView):
    """Submit a run (finished, failed, or opened as running) with its samples and sweep points."""

    @extend_schema(
        operation_id="runs_create",
        request=schema.RunCreateInput,
        responses={
            201: outputs.RunDetailOutputSerializer,
            200: OpenApiResponse(outputs.RunDetailOutputSerializer, description="Already stored (same uuid)."),
            409: OpenApiResponse(description="The uuid belongs to another rig."),
            **_ERRORS,
        },
    )
    def post(self, request: Request) -> Response:
        token = request.auth
        assert isinstance(token, RigToken)  # noqa: S101 - RigTokenOrReadOnly guarantees it
        claimed = request.data.get("rig") if isinstance(request.data, dict) else None
        if isinstance(claimed, str) and claimed != token.rig.name:
            raise exceptions.PermissionDenied(
                f"This token belongs to rig {token.rig.name!r}; it cannot submit runs for rig {claimed!r}."
            )
        data = payload_validated(schema.RunCreateInput, request.data)
        result = run_create_measured(rig=token.rig, data=data)
        if result.created:
            return Response(_created_detail(result), status=status.HTTP_201_CREATED)
        return Response(_detail(result.run.uuid, request), status=status.HTTP_200_OK)


class RunsApi(RunCreateApi, RunListApi):
    """/api/runs/: GET lists (RunListApi), POST submits (RunCreateApi)."""


class RunDetailApi(ApiMixin, APIView):
    """One run with its samples, sweep points, summary and comparison key."""

    OutputSerializer = schema_component(outputs.RunDetailOutputSerializer, "RunDetail")

    @extend_schema(operation_id="runs_retrieve", responses={200: OutputSerializer, 404: OpenApiResponse()})
    def get(self, request: Request, uuid: UUID) -> Response:
        return Response(_detail(uuid, request))


def _owned_run(request: Request, run_uuid: UUID) -> Run:
    """Return the run ``run_uuid`` if the request's token belongs to its rig;
    raise 404 if there is no such run, 403 if it is another rig's."""
    run = Run.objects.select_related("rig").filter(uuid=run_uuid).first()
    if run is None:
        raise Http404
    if run.rig.name != token_rig_name(request):
        raise exceptions.PermissionDenied(
            f"This run belongs to rig {run.rig.name!r}; this token belongs to rig {token_rig_name(request)!r}."
        )
    return run


class OpenRunUpdateApi(ApiMixin, APIView):
    """Add the body's samples and sweep points to the request's own open run
    and, when the body has a status (the finish), close it; answer the run's
    detail. The append and the finish differ only in their input (``payload``)."""

    payload: type[schema.RunAppendInput] = schema.RunAppendInput

    def post(self, request: Request, uuid: UUID) -> Response:
        run = _owned_run(request, uuid)
        data = payload_validated(self.payload, request.data)
        run_append(
            run=run,
            samples=data["samples"],
            sweep_points=data["sweep_points"],
            concurrency_levels=data["concurrency_levels"],
            status=data.get("status"),
            failure_reason=data.get("failure_reason") or "",
            server_log_tail=data.get("server_log_tail"),
            finished_at=data.get("finished_at"),
            fingerprint=data.get("fingerprint"),
            extra=data.get("extra"),
        )
        return Response(_detail(uuid, request))


def _open_run_schema(operation_id: str, payload: type[schema.RunAppendInput], conflict: str) -> Any:
    return extend_schema_view(
        post=extend_schema(
            operation_id=operation_id,
            request=payload,
            responses={
                200: outputs.RunDetailOutputSerializer,
                409: OpenApiResponse(description=conflict),
                **_ERRORS,
            },
        )
    )


@_open_run_schema("runs_samples_create", schema.RunAppendInput, "The run is not running.")
class RunAppendApi(OpenRunUpdateApi):
    """Append samples and sweep points to a running run; stored indexes are skipped."""

    payload = schema.RunAppendInput


@_open_run_schema("runs_finish_create", schema.RunFinishInput, "The run already ended with another status.")
class RunFinishApi(OpenRunUpdateApi):
    """Close a running run as finished, failed or aborted, keeping every sample it has."""

    payload = schema.RunFinishInput
