"""Subscribing a rig to a branch from the site (its owner, or staff for any
rig), and adding reference configurations to a subscription from the rig's runs."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from leaderboard.core.errors import ApplicationError
from leaderboard.regressions.forms import AaFrequencyForm, ReferenceRunsForm, SubscriptionForm, subscribable_rigs
from leaderboard.regressions.matrix import matrix_url
from leaderboard.regressions.models import Subscription
from leaderboard.regressions.selectors_aa import subscription_block_sizing
from leaderboard.regressions.services.subscriptions import (
    reference_configs_add,
    subscription_aa_frequency_set,
    subscription_create,
)
from leaderboard.results.models import Rig


def _chosen_rig(request: HttpRequest) -> Rig | None:
    """Return the rig asked for (posted, else ``?rig=``) if the user may subscribe it."""
    raw = request.POST.get("rig") or request.GET.get("rig") or ""
    return subscribable_rigs(request.user).filter(pk=int(raw)).first() if raw.isdigit() else None


@login_required
@require_http_methods(["GET", "POST"])
def subscribe_page(request: HttpRequest) -> HttpResponse:
    """GET: the form (``?rig=ID`` offers that rig's runs). POST: subscribe, then
    show the branch's matrix; 400 with the form's errors naming the field."""
    rig = _chosen_rig(request)
    form = SubscriptionForm(request.POST or None, user=request.user, rig=rig)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            sub = subscription_create(
                rig=data["rig"],
                repo_url=data["repo_url"],
                branch=data["branch"],
                build_flags=data["build_flags"],
                runs=list(data["runs"]),
                aa_every_days=data["aa_every_days"],
                follows=data["follows"],
                release_source=data["release_source"],
                confirm_mode=data["confirm_mode"],
                screen_every_step=data["screen_every_step"],
            )
        except ApplicationError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        else:
            return redirect(matrix_url(sub.repo_url, sub.branch))
    status = 400 if form.errors else 200
    context = {"form": form, "rig": rig, "rigs": subscribable_rigs(request.user)}
    return render(request, "regressions/subscribe.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def references_add_page(request: HttpRequest, subscription_id: int) -> HttpResponse:
    """Add reference configurations to a subscription of a rig the user may
    subscribe (404 otherwise: someone else's rig is not named)."""
    sub = get_object_or_404(
        Subscription.objects.select_related("rig").filter(rig__in=subscribable_rigs(request.user)), pk=subscription_id
    )
    form = ReferenceRunsForm(request.POST or None, rig=sub.rig)
    if request.method == "POST" and form.is_valid():
        try:
            reference_configs_add(subscription=sub, runs=list(form.cleaned_data["runs"]))
        except ApplicationError as exc:
            form.add_error("runs", exc.message)
        else:
            return redirect(matrix_url(sub.repo_url, sub.branch))
    status = 400 if form.errors else 200
    return render(request, "regressions/references_add.html", {"form": form, "subscription": sub}, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def aa_frequency_page(request: HttpRequest, subscription_id: int) -> HttpResponse:
    """Set how often the subscription's rig runs an A/A check (its owner or
    staff; 404 otherwise); 400 naming the field for a bad value."""
    sub = get_object_or_404(
        Subscription.objects.select_related("rig").filter(rig__in=subscribable_rigs(request.user)), pk=subscription_id
    )
    initial = {"aa_every_days": sub.aa_every_days, "resolve_pct": sub.resolve_pct}
    form = AaFrequencyForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        subscription_aa_frequency_set(subscription=sub, **form.cleaned_data)
        return redirect(matrix_url(sub.repo_url, sub.branch))
    status = 400 if form.errors else 200
    context = {"form": form, "subscription": sub, "sizing": subscription_block_sizing(sub)}
    return render(request, "regressions/aa_frequency.html", context, status=status)
