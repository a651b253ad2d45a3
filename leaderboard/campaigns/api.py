"""REST: open a campaign, record its trials, close it (a rig's token, or staff);
read a campaign with its trials and analysis (public). Each view parses its body
with the payload definition (runners/campaign/schema.py), calls one service or
selector, and serializes: who may do what, and every refusal, is services.py's."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.campaigns import schema
from leaderboard.campaigns.analysis import campaign_analysis
from leaderboard.campaigns.dispatch import campaign_cancel
from leaderboard.campaigns.models import Campaign, Trial
from leaderboard.campaigns.selectors import campaign_get_visible, campaign_list_public, campaign_trials
from leaderboard.campaigns.services import campaign_finish, campaign_for_writer, campaign_open, trial_record
from leaderboard.campaigns.stored import finite_json, readable_trials
from leaderboard.results.api.parsers import BoundedJSONParser
from leaderboard.results.api.payloads import payload_model
from leaderboard.results.api.permissions import is_staff, token_rig_id
from runners.campaign import schema as payloads


class IsStaffOrRigToken(permissions.BasePermission):
    message = "Give the rig's token (Authorization: Token <token>) or sign in as staff."

    def has_permission(self, request: Request, view: Any) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return True
        return is_staff(request) or token_rig_id(request) is not None


def _own_campaign(request: Request, campaign_id: int) -> Campaign:
    return campaign_for_writer(campaign_id=campaign_id, staff=is_staff(request), token_rig_id=token_rig_id(request))


def trial_output(trial: Trial) -> dict[str, Any]:
    return {
        "number": trial.number,
        "params": trial.params,
        "state": trial.state,
        "value": trial.value,
        "metrics": trial.metrics,
        "samples": trial.samples,
        "repetitions": trial.repetitions,
        "run_uuid": str(trial.run_uuid) if trial.run_uuid else None,
        "run_id": trial.run_id,
        "failure_kind": trial.failure_kind,
        "failure_reason": trial.failure_reason,
        "log_tail": trial.log_tail,
        "pruned": trial.pruned,
        "role": trial.role,
        "duration_s": trial.duration_s,
        "measured_s": trial.measured_s,
        "overhead_s": trial.overhead_s,
    }


def campaign_output(campaign: Campaign, *, trials: bool = True) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": campaign.id,
        "rig": campaign.rig.name,
        "name": campaign.name,
        "spec": campaign.spec,
        "base_config": campaign.base_config,
        "origin": campaign.origin,
        "status": campaign.status,
        "status_reason": campaign.status_reason,
        "created_at": campaign.created_at,
        "finished_at": campaign.finished_at,
    }
    if trials:
        rows = campaign_trials(campaign=campaign)
        data["trials"] = [trial_output(t) for t in rows]
        data["analysis"] = campaign_analysis(campaign.spec, rows, base=campaign.base_config).as_dict()
    return finite_json(data)  # type: ignore[no-any-return]


class CampaignApi(APIView):
    """JSON in (bounded, strict: the runs API's parser), each body checked against its payload definition."""

    parser_classes = [BoundedJSONParser]


class CampaignListCreateApi(CampaignApi):
    permission_classes = [IsStaffOrRigToken]

    @extend_schema(operation_id="campaigns_list", responses=schema.CampaignListSerializer)
    def get(self, request: Request) -> Response:
        return Response({"results": [campaign_output(c, trials=False) for c in campaign_list_public()]})

    @extend_schema(
        operation_id="campaigns_create",
        request=payloads.CampaignCreateInput,
        responses={201: schema.CampaignOutputSerializer},
    )
    def post(self, request: Request) -> Response:
        data = payload_model(payloads.CampaignCreateInput, request.data)
        campaign = campaign_open(data=data, token_rig_id=token_rig_id(request), created_by=request.user)
        return Response(campaign_output(campaign), status=status.HTTP_201_CREATED)


class CampaignDetailApi(CampaignApi):
    permission_classes = [permissions.AllowAny]

    @extend_schema(operation_id="campaigns_retrieve", responses=schema.CampaignOutputSerializer)
    def get(self, request: Request, campaign_id: int) -> Response:
        # A hidden rig's campaign answers 404 but to staff, its owner and its rig's token.
        campaign = campaign_get_visible(
            campaign_id=campaign_id, viewer=request.user, token_rig_id=token_rig_id(request)
        )
        return Response(campaign_output(campaign))


class TrialCreateApi(CampaignApi):
    permission_classes = [IsStaffOrRigToken]

    @extend_schema(
        operation_id="campaigns_trials_create",
        request=payloads.TrialInput,
        responses={
            201: schema.TrialOutputSerializer,
            200: schema.TrialOutputSerializer,
            409: OpenApiResponse(description="The campaign is closed: it takes no new trial."),
        },
    )
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = _own_campaign(request, campaign_id)
        data = payload_model(payloads.TrialInput, request.data)
        trial, created = trial_record(campaign=campaign, data=data)
        (trial,) = readable_trials([trial])
        return Response(
            finite_json(trial_output(trial)), status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )


class CampaignCancelApi(CampaignApi):
    permission_classes = [IsStaffOrRigToken]

    @extend_schema(
        operation_id="campaigns_cancel",
        request=payloads.CampaignCancelInput,
        responses=schema.CampaignOutputSerializer,
    )
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = _own_campaign(request, campaign_id)
        reason = payload_model(payloads.CampaignCancelInput, request.data).reason
        campaign = campaign_cancel(campaign=campaign, reason=reason or "cancelled")
        return Response(campaign_output(campaign))


class CampaignFinishApi(CampaignApi):
    permission_classes = [IsStaffOrRigToken]

    @extend_schema(
        operation_id="campaigns_finish",
        request=payloads.CampaignFinishInput,
        responses=schema.CampaignSummarySerializer,
    )
    def post(self, request: Request, campaign_id: int) -> Response:
        campaign = _own_campaign(request, campaign_id)
        data = payload_model(payloads.CampaignFinishInput, request.data)
        campaign = campaign_finish(campaign=campaign, status=data.status, reason=data.reason)
        return Response(campaign_output(campaign, trials=False))
