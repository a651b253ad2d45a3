"""The owner pages under /me/: my rigs, register a rig, tokens, edit, llama-bench upload."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from leaderboard.core.errors import ApplicationError
from leaderboard.intake import owners
from leaderboard.intake.forms import LlamaBenchUploadForm, RigForm, RigRegisterForm, TokenForm
from leaderboard.intake.models import RigOwnership
from leaderboard.intake.parsers import max_file_bytes
from leaderboard.intake.services import llama_bench_import
from leaderboard.intake.throttling import account_write_limited
from leaderboard.results.models import Rig, Run
from runners.llamabench import LlamaBenchError
from runners.onboard.service import rig_commands, site_line

RECENT_RUNS = 10


def _own(request: HttpRequest, rig_id: int) -> Rig:
    try:
        return owners.owned_rig_get(owner=request.user, rig_id=rig_id)  # type: ignore[arg-type]
    except ApplicationError as exc:
        raise Http404(exc.message) from exc


@login_required
def my_rigs(request: HttpRequest) -> HttpResponse:
    ownerships = (
        RigOwnership.objects.filter(owner=request.user)  # type: ignore[misc]
        .select_related("rig")
        .prefetch_related("rig__tokens", "rig__gpus")
        .order_by("rig__name")
    )
    rigs = []
    for ownership in ownerships:
        runs = (
            Run.objects.filter(rig=ownership.rig)
            .select_related("workload", "model_file")
            .order_by("-created_at")[:RECENT_RUNS]
        )
        tokens = sorted(ownership.rig.tokens.all(), key=lambda t: t.created_at, reverse=True)
        # Any request with one of its tokens (a run, a doctor's whoami) is the rig's contact.
        last_contact = max((t.last_used_at for t in tokens if t.last_used_at is not None), default=None)
        rigs.append(
            {
                "ownership": ownership,
                "rig": ownership.rig,
                "tokens": tokens,
                "runs": list(runs),
                "last_contact": last_contact,
            }
        )
    return render(request, "intake/my_rigs.html", {"rigs": rigs})


@login_required
@require_http_methods(["GET", "POST"])
@account_write_limited
def rig_register(request: HttpRequest) -> HttpResponse:
    form = RigRegisterForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            rig, raw = owners.owned_rig_register(
                owner=request.user,  # type: ignore[arg-type]
                name=form.cleaned_data["name"],
                gpus=form.cleaned_data["gpus"],
                **form.rig_fields(),
            )
        except ApplicationError as exc:
            form.add_error("name", exc.message)
        else:
            return _token_once(request, rig, raw, new_rig=True)
    return render(request, "intake/rig_form.html", {"form": form, "title": "Register a rig"})


@login_required
@require_http_methods(["GET", "POST"])
@account_write_limited
def rig_edit(request: HttpRequest, rig_id: int) -> HttpResponse:
    rig = _own(request, rig_id)
    form = RigForm(request.POST or None, instance=rig)
    if request.method == "POST" and form.is_valid():
        owners.owned_rig_update(rig=rig, **form.cleaned_data)
        return redirect("owners:my-rigs")
    return render(request, "intake/rig_form.html", {"form": form, "title": f"Edit {rig.name}", "rig": rig})


@login_required
@require_POST
@account_write_limited
def token_issue(request: HttpRequest, rig_id: int) -> HttpResponse:
    rig = _own(request, rig_id)
    form = TokenForm(request.POST)
    label = form.cleaned_data["label"] if form.is_valid() else ""
    try:
        _, raw = owners.owned_token_issue(owner=request.user, rig=rig, label=label)  # type: ignore[arg-type]
    except ApplicationError as exc:
        return HttpResponse(exc.message, status=exc.status_code, content_type="text/plain; charset=utf-8")
    return _token_once(request, rig, raw, new_rig=False)


def _token_once(request: HttpRequest, rig: Rig, raw: str, *, new_rig: bool) -> HttpResponse:
    """The page that shows a new token once, with the rig's commands filled in with it."""
    url = request.build_absolute_uri("/").rstrip("/")
    context = {
        "rig": rig,
        "raw_token": raw,
        "new_rig": new_rig,
        "commands": rig_commands(url=url, token=raw, rig=rig.name, source=settings.RIGBOARD_RUNNER_SOURCE),
        "site_line": site_line(url, raw),
    }
    return render(request, "intake/token_once.html", context)


@login_required
@require_POST
@account_write_limited
def token_revoke(request: HttpRequest, rig_id: int, token_id: int) -> HttpResponse:
    rig = _own(request, rig_id)
    try:
        owners.owned_token_revoke(rig=rig, token_id=token_id)
    except ApplicationError as exc:
        raise Http404(exc.message) from exc
    return redirect("owners:my-rigs")


# Room for the form's other fields and the multipart framing around the file.
_FORM_OVERHEAD_BYTES = 64 * 1024


@login_required
@require_http_methods(["GET", "POST"])
@account_write_limited
def llama_bench_upload(request: HttpRequest, rig_id: int) -> HttpResponse:
    rig = _own(request, rig_id)
    limit = max_file_bytes()  # the API's limit (POST /api/llama-bench/)
    declared = request.META.get("CONTENT_LENGTH") or ""
    if request.method == "POST" and declared.isdigit() and int(declared) > limit + _FORM_OVERHEAD_BYTES:
        # Refused before the body is read: Django would spool any size of file to disk first.
        context: dict[str, object] = {"rig": rig, "form": LlamaBenchUploadForm()}
        context["errors"] = {"file": [f"The file is over the limit of {limit} bytes."]}
        return render(request, "intake/llama_bench_upload.html", context, status=413)
    form = LlamaBenchUploadForm(request.POST or None, request.FILES or None)
    context = {"rig": rig, "form": form}
    if request.method == "POST" and form.is_valid():
        try:
            upload = form.cleaned_data["file"]
            if upload:
                raw = upload.read(limit + 1)
                if len(raw) > limit:
                    context["errors"] = {"file": [f"The file is over the limit of {limit} bytes."]}
                    return render(request, "intake/llama_bench_upload.html", context, status=413)
                text = raw.decode("utf-8")
            else:
                text = form.cleaned_data["paste"]
            result = llama_bench_import(
                rig=rig, text=text, notes=form.cleaned_data["notes"], repetitions=form.cleaned_data["repetitions"]
            )
        except UnicodeDecodeError:
            context["errors"] = {"file": ["The file is not UTF-8 text."]}
        except LlamaBenchError as exc:
            context["errors"] = exc.errors
        except ApplicationError as exc:  # a row's uuid taken by another rig: nothing stored
            context["errors"] = {exc.field or "file": [exc.message]}
        else:
            context["result"] = result
    status = 400 if context.get("errors") or form.errors else 200
    return render(request, "intake/llama_bench_upload.html", context, status=status)
