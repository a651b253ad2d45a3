"""A campaign's origin is one of two words (runners/campaign/states.CampaignOrigin):
any other is refused naming the field, never stored as "terminal"."""

from __future__ import annotations

import pytest

from leaderboard.campaigns.models import Campaign
from leaderboard.campaigns.services import campaign_create
from leaderboard.core.errors import ApplicationError

BODY = {"name": "o", "space": {"threads": [2, 4]}, "repetitions": 1}


@pytest.mark.django_db
def test_an_unknown_origin_is_refused_naming_the_field(make_rig):
    rig = make_rig()
    with pytest.raises(ApplicationError) as refused:
        campaign_create(rig=rig, data=BODY, origin="servcie")
    assert refused.value.field == "origin" and "terminal, service" in refused.value.message
    assert not Campaign.objects.exists()
    assert campaign_create(rig=rig, data=BODY, origin="terminal").origin == "terminal"
