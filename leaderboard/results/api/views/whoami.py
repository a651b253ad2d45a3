"""/api/whoami/: whose token is this? The rig's own check (``rigboard-runner doctor``)."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.results.api.serializers import outputs
from leaderboard.results.api.views.base import ApiMixin, schema_component
from leaderboard.results.models import Rig, RigToken

RigOutputSerializer = schema_component(outputs.RigOutputSerializer, "Rig")


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
