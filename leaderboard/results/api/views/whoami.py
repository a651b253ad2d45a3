"""/api/whoami/: whose token is this? The rig's own check (``rigboard-runner doctor``);
/api/whoami/hardware/: the rig replaces its recorded hardware with what it detected."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.results.api.views.base import ApiMixin
from leaderboard.results.api.views.rigs import RigOutputSerializer
from leaderboard.results.models import Rig, RigToken
from leaderboard.results.services.rigs import GpuSpec, rig_hardware_update

MAX_GPU_GROUPS = 32


class HasRigToken(permissions.BasePermission):
    """Only a request carrying a valid rig token; anyone else gets 401."""

    message = "This endpoint says whose token a request carries: send 'Authorization: Token <token>'."

    def has_permission(self, request: Request, view: object) -> bool:
        return isinstance(request.auth, RigToken)


class TokenOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = RigToken
        fields = ["prefix", "label", "created_at", "last_used_at"]


class WhoAmIOutputSerializer(serializers.Serializer):
    rig = RigOutputSerializer()
    token = TokenOutputSerializer()
    server_time = serializers.DateTimeField(help_text="The service's clock when it answered (UTC).")


class WhoAmIApi(ApiMixin, APIView):
    """The rig the request's token belongs to, with its recorded hardware, and the token itself
    (prefix, label, dates; never the token). Read-only; a missing, unknown or revoked token is a 401."""

    permission_classes = [HasRigToken]

    @extend_schema(
        operation_id="whoami_retrieve",
        responses={
            200: WhoAmIOutputSerializer,
            401: OpenApiResponse(description="No token, or an unknown or revoked one."),
        },
    )
    def get(self, request: Request) -> Response:
        token = request.auth
        assert isinstance(token, RigToken)  # noqa: S101 - HasRigToken guarantees it
        rig = Rig.objects.prefetch_related("gpus").get(pk=token.rig_id)
        body = {"rig": rig, "token": token, "server_time": timezone.now()}
        return Response(WhoAmIOutputSerializer(body).data)


class GpuGroupInputSerializer(serializers.Serializer):
    model = serializers.CharField(max_length=200)
    vram_gb = serializers.FloatField(min_value=0.001, max_value=100_000, allow_null=True, required=False)
    count = serializers.IntegerField(min_value=1, max_value=1024, required=False, default=1)
    power_limit_w = serializers.FloatField(min_value=0.001, max_value=100_000, allow_null=True, required=False)


class HardwareInputSerializer(serializers.Serializer):
    # Absent: the GPUs on record are kept. many=True takes max_length; the stubs miss it.
    gpus = GpuGroupInputSerializer(many=True, max_length=MAX_GPU_GROUPS, required=False)  # type: ignore[call-arg]
    cpu = serializers.CharField(max_length=200, allow_blank=True, required=False)
    cpu_cores = serializers.IntegerField(min_value=1, max_value=100_000, allow_null=True, required=False)
    ram_gb = serializers.FloatField(min_value=0.001, max_value=1_000_000, allow_null=True, required=False)
    os = serializers.CharField(max_length=200, allow_blank=True, required=False)
    driver_version = serializers.CharField(max_length=100, allow_blank=True, required=False)
    cuda_version = serializers.CharField(max_length=100, allow_blank=True, required=False)


class WhoAmIHardwareApi(ApiMixin, APIView):
    """Replace the hardware on record for the token's own rig (its GPU groups, and the CPU,
    RAM, OS and driver fields given) with what the rig detected (``rigboard-runner doctor
    --update-rig``). The rig's name, owner and notes are not changed. Answers as GET /api/whoami/."""

    permission_classes = [HasRigToken]

    @extend_schema(
        operation_id="whoami_hardware_update",
        request=HardwareInputSerializer,
        responses={
            200: WhoAmIOutputSerializer,
            400: OpenApiResponse(description="A field is missing or out of range (named in the errors)."),
            401: OpenApiResponse(description="No token, or an unknown or revoked one."),
        },
    )
    def put(self, request: Request) -> Response:
        token = request.auth
        assert isinstance(token, RigToken)  # noqa: S101 - HasRigToken guarantees it
        data = HardwareInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        groups = fields.pop("gpus", None)
        gpus = None if groups is None else [GpuSpec(**group) for group in groups]
        rig = Rig.objects.get(pk=token.rig_id)
        rig_hardware_update(rig=rig, gpus=gpus, **fields)
        rig = Rig.objects.prefetch_related("gpus").get(pk=rig.pk)
        body = {"rig": rig, "token": token, "server_time": timezone.now()}
        return Response(WhoAmIOutputSerializer(body).data)
