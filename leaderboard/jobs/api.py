"""The jobs API (docs/api.md, "Benchmark jobs"): staff queue and read jobs; a
rig reads its own jobs and reports their status with its token."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field, extend_schema_serializer
from rest_framework import permissions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.core.api.pagination import Pagination
from leaderboard.core.errors import ApplicationError
from leaderboard.jobs.models import BenchmarkJob, JobKind, JobStatus
from leaderboard.jobs.selectors import jobs_attach_runs, jobs_list
from leaderboard.jobs.services import job_abort, job_run_again, job_status_update, jobs_enqueue
from leaderboard.results.api.parsers import BoundedJSONParser
from leaderboard.results.api.payloads import payload_model
from leaderboard.results.api.permissions import is_staff, token_rig_id
from leaderboard.results.api.serializers.fields import StrictCharField, whole
from leaderboard.results.models import Rig
from runners.delivery.status_schema import JobStatusInput

_NO_BROKER = OpenApiResponse(
    description="No Celery broker is configured, or it could not be reached (the job is then recorded as failed)."
)


class IsStaff(permissions.BasePermission):
    message = "Only staff may do this."

    def has_permission(self, request: Request, view: Any) -> bool:
        return is_staff(request)


class IsStaffOrRigToken(permissions.BasePermission):
    """Staff, or a rig token (which then sees only its own rig's jobs)."""

    message = "Jobs are visible to staff and to the job's own rig (Authorization: Token <token>)."

    def has_permission(self, request: Request, view: Any) -> bool:
        return is_staff(request) or token_rig_id(request) is not None

    def has_object_permission(self, request: Request, view: Any, obj: Any) -> bool:
        return is_staff(request) or token_rig_id(request) == obj.rig_id


class JobRunOutputSerializer(serializers.Serializer):
    uuid = serializers.UUIDField()
    status = serializers.CharField()
    url = serializers.CharField()


class JobOutputSerializer(serializers.ModelSerializer):
    rig = serializers.CharField(source="rig.name")
    queue = serializers.CharField(source="rig.queue_name")
    created_by = serializers.CharField(source="created_by.get_username", default=None, allow_null=True)
    run = serializers.SerializerMethodField()

    class Meta:
        model = BenchmarkJob
        fields = [
            "id",
            "rig",
            "queue",
            "kind",
            "status",
            "spec",
            "run_uuid",
            "run",
            "celery_task_id",
            "soft_time_limit_s",
            "time_limit_s",
            "created_by",
            "rerun_of",
            "attempt",
            "worker",
            "progress",
            "error",
            "created_at",
            "expires_at",
            "started_at",
            "finished_at",
            "updated_at",
        ]

    @extend_schema_field(JobRunOutputSerializer(allow_null=True))
    def get_run(self, job: BenchmarkJob) -> dict[str, Any] | None:
        """The run the job produced ({uuid, status, url}), or null until the rig posts it."""
        run = job.run
        if run is None:
            return None
        return {"uuid": str(run.uuid), "status": run.status, "url": f"/api/runs/{run.uuid}/"}


def _job_response(job: BenchmarkJob, code: int = status.HTTP_200_OK) -> Response:
    return Response(JobOutputSerializer(job).data, status=code)


def _queued_response(job: BenchmarkJob) -> Response:
    """201 with a job that went to its rig's queue. A job the broker would not
    take is kept, failed with the broker's error (the job list shows it, and
    "run again" retries it), and answered 503: nothing was queued, and the
    broker being away is the service's trouble, worth trying again later."""
    if job.status == JobStatus.FAILED:
        raise ApplicationError(
            f"job {job.pk} was not queued and is recorded as failed: {job.error}; run it again when the broker is back",
            field="rig",
            status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
        )
    return _job_response(job, status.HTTP_201_CREATED)


class JobApiView(APIView):
    """JSON in (bounded, strict: the runs API's parser) and out."""

    parser_classes = [BoundedJSONParser]


class JobListCreateApi(JobApiView):
    """GET: jobs newest first (staff: all, filter ?rig= ?status=; a rig token: its own).
    POST (staff): queue a job on the rig's queue; 201 with the job."""

    # Declares the paginated answer in the schema; get() paginates by hand.
    pagination_class = Pagination

    @extend_schema_serializer(component_name="JobCreateInput")
    class InputSerializer(serializers.Serializer):
        rig = StrictCharField(max_length=200)
        kind = serializers.ChoiceField(choices=JobKind.choices, default=JobKind.SUITE)
        spec = serializers.JSONField()
        time_limit_s = whole(min_value=1)

    class FilterSerializer(serializers.Serializer):
        rig = serializers.CharField(required=False, default="", max_length=200, help_text="Rig name (exact).")
        status = serializers.ChoiceField(choices=JobStatus.choices, required=False, default="")

    def get_permissions(self) -> list[permissions.BasePermission]:
        return [IsStaff()] if self.request.method == "POST" else [IsStaffOrRigToken()]

    @extend_schema(parameters=[FilterSerializer], responses=JobOutputSerializer(many=True))
    def get(self, request: Request) -> Response:
        rig_id = None if is_staff(request) else token_rig_id(request)
        filters = self.FilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        jobs = jobs_list(
            rig=Rig.objects.filter(pk=rig_id).first() if rig_id else None,
            rig_name=filters.validated_data["rig"],
            status=filters.validated_data["status"],
        )
        paginator = Pagination()
        page = jobs_attach_runs(paginator.paginate_queryset(jobs, request, view=self) or [])
        return paginator.get_paginated_response(JobOutputSerializer(page, many=True).data)

    @extend_schema(request=InputSerializer, responses={201: JobOutputSerializer, 503: _NO_BROKER})
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        rig = Rig.objects.filter(name=data.validated_data["rig"]).first()
        if rig is None:
            raise ApplicationError("no rig with this name", field="rig")
        job = jobs_enqueue(
            rig=rig,
            kind=data.validated_data["kind"],
            spec=data.validated_data["spec"],
            created_by=request.user,
            time_limit_s=data.validated_data.get("time_limit_s"),
        )
        return _queued_response(job)


class JobDetailApi(JobApiView):
    """GET one job (staff, or the job's rig)."""

    permission_classes = [IsStaffOrRigToken]

    @extend_schema(responses=JobOutputSerializer)
    def get(self, request: Request, job_id: int) -> Response:
        job = get_object_or_404(BenchmarkJob.objects.select_related("rig", "created_by"), pk=job_id)
        self.check_object_permissions(request, job)
        return _job_response(job)


class JobStatusApi(JobApiView):
    """POST a status report. The job's rig (token) reports running / finished /
    failed / aborted with its attempt id; staff may only abort. 409 for a move
    the job's current status does not allow (e.g. a second attempt starting)."""

    permission_classes = [IsStaffOrRigToken]

    @extend_schema(
        request=JobStatusInput,
        responses={
            200: JobOutputSerializer,
            409: OpenApiResponse(description="The job's status does not allow this move."),
        },
    )
    def post(self, request: Request, job_id: int) -> Response:
        job = get_object_or_404(BenchmarkJob.objects.select_related("rig"), pk=job_id)
        self.check_object_permissions(request, job)
        fields = payload_model(JobStatusInput, request.data).model_dump()
        if token_rig_id(request) is None:  # staff, not the rig
            if fields["status"] != JobStatus.ABORTED:
                raise ApplicationError("staff may only abort a job; the rig reports the rest", field="status")
            reason = fields["error"] or f"aborted by {request.user.get_username()}"
            return _job_response(job_abort(job=job, reason=reason))
        updated = job_status_update(
            job=job,
            status=fields["status"],
            attempt=fields["attempt"],
            worker=fields["worker"],
            progress=fields["progress"],
            error=fields["error"],
            failure_kind=fields["failure_kind"],
        )
        return _job_response(updated)


class JobRunAgainApi(JobApiView):
    """POST (staff): queue a copy of the job (same rig, kind, spec, time limit; a
    new run uuid). 201 with the new job."""

    permission_classes = [IsStaff]

    @extend_schema(request=None, responses={201: JobOutputSerializer, 503: _NO_BROKER})
    def post(self, request: Request, job_id: int) -> Response:
        job = get_object_or_404(BenchmarkJob.objects.select_related("rig"), pk=job_id)
        return _queued_response(job_run_again(job=job, created_by=request.user))
