"""Admin for benchmark jobs: a "queue benchmark job" form (the add button),
and actions to run selected jobs again or abort them. Jobs are read-only once
queued: the rig reports their progress."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from leaderboard.core.errors import ApplicationError
from leaderboard.jobs.forms import QueueJobForm
from leaderboard.jobs.models import BenchmarkJob
from leaderboard.jobs.selectors import jobs_attach_runs
from leaderboard.jobs.services import job_abort, job_run_again, jobs_enqueue


@admin.register(BenchmarkJob)
class BenchmarkJobAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "rig",
        "kind",
        "status",
        "run_link",
        "progress",
        "created_by",
        "created_at",
        "expires_at",
        "finished_at",
    ]
    list_filter = ["status", "kind", "rig"]
    search_fields = ["rig__name", "run_uuid", "celery_task_id", "error"]
    actions = ["run_again", "abort"]
    date_hierarchy = "created_at"

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [f.name for f in BenchmarkJob._meta.fields] + ["run_link"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_staff)

    def get_changelist_instance(self, request: HttpRequest) -> Any:
        changelist = super().get_changelist_instance(request)
        # The run column reads job.run per row: the page's runs in one query.
        jobs_attach_runs(changelist.result_list)
        return changelist

    @admin.display(description="run")
    def run_link(self, job: BenchmarkJob) -> str:
        run = job.run
        if run is None:
            return "-"
        url = reverse("admin:results_run_change", args=[run.pk]) if admin.site.is_registered(type(run)) else ""
        return format_html('<a href="{}">{} ({})</a>', url, str(run.uuid)[:8], run.status) if url else run.status

    def get_urls(self) -> list[URLPattern]:
        queue = path("queue/", self.admin_site.admin_view(self.queue_view), name="jobs_benchmarkjob_queue")
        return [queue, *super().get_urls()]

    def add_view(self, request: HttpRequest, form_url: str = "", extra_context: Any = None) -> HttpResponse:
        # A job is queued, never created by hand: "Add" opens the queue form.
        return HttpResponseRedirect(reverse("admin:jobs_benchmarkjob_queue") + _query(request))

    def queue_view(self, request: HttpRequest) -> HttpResponse:
        """Queue a benchmark job for a rig (``?rig=<id>`` preselects one)."""
        if not self.has_add_permission(request):
            return HttpResponseRedirect(reverse("admin:index"))
        if request.method == "POST":
            form = QueueJobForm(request.POST)
            if form.is_valid():
                try:
                    job = jobs_enqueue(
                        rig=form.cleaned_data["rig"],
                        kind=form.cleaned_data["kind"],
                        spec=form.cleaned_data["spec"],
                        created_by=request.user,
                        time_limit_s=form.cleaned_data["time_limit_s"],
                    )
                except ApplicationError as exc:
                    form.add_error(None, f"{exc.field}: {exc.message}" if exc.field else exc.message)
                else:
                    self.message_user(request, f"Queued job {job.pk} on {job.rig.queue_name}.", messages.SUCCESS)
                    return HttpResponseRedirect(reverse("admin:jobs_benchmarkjob_change", args=[job.pk]))
        else:
            form = QueueJobForm(initial={"rig": request.GET.get("rig")} if request.GET.get("rig") else None)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Queue benchmark job",
            "form": form,
        }
        return TemplateResponse(request, "admin/jobs/queue_job.html", context)

    @admin.action(description="Run again (queue a copy of each selected job)")
    def run_again(self, request: HttpRequest, queryset: QuerySet[BenchmarkJob]) -> None:
        for job in queryset.select_related("rig"):
            try:
                new = job_run_again(job=job, created_by=request.user)
            except ApplicationError as exc:
                self.message_user(request, f"Job {job.pk}: {exc.message}", messages.ERROR)
            else:
                self.message_user(request, f"Queued job {new.pk} (again of {job.pk}).", messages.SUCCESS)

    @admin.action(description="Abort selected queued/running jobs")
    def abort(self, request: HttpRequest, queryset: QuerySet[BenchmarkJob]) -> None:
        for job in queryset.select_related("rig"):
            try:
                job_abort(job=job, reason=f"aborted by {request.user.get_username()} in the admin")
            except ApplicationError as exc:
                self.message_user(request, f"Job {job.pk}: {exc.message}", messages.WARNING)
            else:
                self.message_user(request, f"Aborted job {job.pk}.", messages.SUCCESS)


def _query(request: HttpRequest) -> str:
    return f"?{request.GET.urlencode()}" if request.GET else ""
