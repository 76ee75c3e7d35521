from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import Count, Q
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from fleet import audit, lifecycle
from fleet.access import is_operator
from fleet.models import (
    Artifact,
    AuditEvent,
    Cluster,
    ExchangeRate,
    GpuModelPrice,
    IngestRun,
    Job,
    LogEvent,
    Owner,
    SsoIdentity,
    Team,
    UserProfile,
)


class AuditedAdmin(admin.ModelAdmin):
    """Admin saves and deletions of this model go to the audit log (fleet.audit)."""

    audit_name = ""  # e.g. "price": actions are price.create / price.change / price.delete

    def audit_details(self, obj) -> dict:
        return {}

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        details = {"fields": sorted(form.changed_data), **self.audit_details(obj)}
        audit.record(request.user, f"{self.audit_name}.{'change' if change else 'create'}", obj, details)

    def delete_model(self, request, obj):
        details, label = self.audit_details(obj), str(obj)
        super().delete_model(request, obj)
        audit.record(request.user, f"{self.audit_name}.delete", label, details)

    def delete_queryset(self, request, queryset):
        labels = [str(obj) for obj in queryset[:1000]]
        count = queryset.count()
        super().delete_queryset(request, queryset)
        audit.record(
            request.user,
            f"{self.audit_name}.delete",
            f"{count} {self.model._meta.verbose_name_plural}",
            {"objects": labels},
        )


# -- deletions with their jobs, by a task (fleet.lifecycle) --------------------------------------------
# Deleting a team's or an ingest run's jobs, or every job the admin's list can select, took as long as the
# jobs and their files: gunicorn's --timeout killed the request half way and the deletion rolled back. These
# actions start a deletion and send the operator to its page (/deletions/<id>/), which shows the progress.


def _show_started(request, started: list, refused: list[str]):
    """Send the operator to the one deletion's page, or say where each one is; say what was refused."""
    for reason in refused:
        messages.error(request, reason)
    started = [deletion for deletion in started if deletion is not None]
    if not started:
        return None
    if len(started) == 1:
        return redirect("fleet:deletion", started[0].pk)
    links = format_html_join(
        ", ", '<a href="{}">{}</a>', ((reverse("fleet:deletion", args=[d.pk]), d.target_display) for d in started)
    )
    messages.info(request, format_html("Being deleted by a worker, each on its page: {}.", links))
    return None


def _start_each(request, objects: list, delete):
    """Start `delete(obj, user)` (a lifecycle deletion: (deletion, reason refused)) for each object."""
    outcomes = [delete(obj, request.user) for obj in objects]
    return _show_started(request, [deletion for deletion, _ in outcomes], [why for _, why in outcomes if why])


def _confirm_with_jobs(modeladmin, request, queryset, action: str, rows: list[tuple[str, int]], note: str):
    """The intermediate page before such an action: what goes, with how many jobs, and a button."""
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": "Are you sure?",
        "opts": modeladmin.model._meta,
        "rows": rows,
        "note": note,
        "queryset": queryset,
        "action": action,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "media": modeladmin.media,
    }
    return TemplateResponse(request, "admin/fleet/delete_with_jobs.html", context)


class DeletesWithJobs:
    """`has_delete_with_jobs_permission`: the admin's delete permission, and an operator (the deletion's
    page, where the action leads, is for operators)."""

    def has_delete_with_jobs_permission(self, request, obj=None) -> bool:
        return is_operator(request.user) and self.has_delete_permission(request, obj)


@admin.action(
    permissions=["delete_with_jobs"], description="Delete selected teams with all their jobs (in the background)"
)
def delete_teams_with_jobs(modeladmin, request, queryset):
    teams = list(queryset.annotate(job_count=Count("jobs")).order_by("slug"))
    if request.POST.get("post") != "yes":
        rows = [(str(team), team.job_count) for team in teams]
        note = ("Each team goes with its jobs (their series, logs, findings and answers), memberships and digests. "
                "A team with a job a labeling study or gold set holds is refused: it stays for that job.")  # fmt: skip
        return _confirm_with_jobs(modeladmin, request, queryset, "delete_teams_with_jobs", rows, note)
    return _start_each(request, teams, lifecycle.delete_team)


@admin.action(
    permissions=["delete_with_jobs"],
    description="Delete selected ingest runs with the jobs they stored (in the background)",
)
def delete_runs_with_jobs(modeladmin, request, queryset):
    runs = list(queryset.annotate(job_count=Count("jobs")).order_by("pk"))
    if request.POST.get("post") != "yes":
        rows = [(str(run), run.job_count) for run in runs]
        note = ("Each run goes with the jobs it stored last (their series, logs, findings and labels) and its "
                "uploaded archive if it still waits in the upload folder. Jobs a labeling study or gold set holds "
                "stay.")  # fmt: skip
        return _confirm_with_jobs(modeladmin, request, queryset, "delete_runs_with_jobs", rows, note)
    return _start_each(request, runs, lifecycle.delete_ingest_run)


def _what_goes(jobs) -> dict[str, int]:
    """What deleting these jobs deletes, counted in the database: Django's own confirmation page listed
    every related object of every job, which took minutes for a select-all over tens of thousands."""

    counts = jobs.aggregate(jobs=Count("pk"), series=Count("pk", filter=~Q(series_file="")))
    try:  # a job's findings are triage's (which fleet does not import): found through the relation
        findings = Job._meta.get_field("findings").related_model
    except LookupError:
        counts["findings"] = 0
    else:
        counts["findings"] = findings.objects.filter(job__in=jobs).count()
    counts["kept"] = len(lifecycle.kept_job_ids(jobs))
    return counts


@admin.action(permissions=["delete"], description="Delete selected %(verbose_name_plural)s")
def delete_selected_jobs(modeladmin, request, queryset):
    """A light confirmation page (counts of what goes), then the jobs go by a task
    (JobAdmin.delete_queryset) and the operator lands on the deletion's page."""
    if request.POST.get("post") != "yes":
        counts = _what_goes(queryset)
        context = {
            **modeladmin.admin_site.each_context(request),
            "title": "Are you sure?",
            "opts": modeladmin.model._meta,
            "counts": counts,
            "deletable": counts["jobs"] - counts["kept"],
            "select_across": request.POST.get("select_across") == "1",
            "selected": request.POST.getlist(helpers.ACTION_CHECKBOX_NAME),
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "media": modeladmin.media,
        }
        return TemplateResponse(request, "admin/fleet/delete_jobs.html", context)
    modeladmin.delete_queryset(request, queryset)
    deletion, refused = request.fleet_deletion
    if deletion is not None and not is_operator(request.user):  # its page is for operators
        messages.info(request, f"The {deletion.target_display} are being deleted by a worker.")
        return None
    return _show_started(request, [deletion], [refused] if refused else [])


class OwnerInline(admin.TabularInline):
    model = Owner
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Team)
class TeamAdmin(DeletesWithJobs, AuditedAdmin):
    audit_name = "team"
    actions = [delete_teams_with_jobs]
    list_display = ["slug", "name"]
    search_fields = ["slug", "name"]
    inlines = [OwnerInline]


@admin.register(UserProfile)
class UserProfileAdmin(admin.ModelAdmin):
    """A user's own settings (the time zone pages show times in), for an operator to look up or correct."""

    list_display = ["user", "time_zone"]
    search_fields = ["user__username", "time_zone"]
    autocomplete_fields = ["user"]


@admin.register(SsoIdentity)
class SsoIdentityAdmin(admin.ModelAdmin):
    """Who a user is at the single sign-on provider (fleet/sso.py). Adding one links a local account to
    a provider's subject, the one way a sign-in reaches an account it did not create."""

    list_display = ["user", "subject", "issuer"]
    search_fields = ["user__username", "subject"]
    autocomplete_fields = ["user"]
    readonly_fields = ["last_login_groups"]


@admin.register(Owner)
class OwnerAdmin(admin.ModelAdmin):
    list_display = ["user", "team"]
    list_filter = ["team"]
    search_fields = ["user__username", "team__slug"]
    autocomplete_fields = ["user", "team"]


class GpuModelPriceInline(admin.TabularInline):
    model = GpuModelPrice
    extra = 0


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    list_display = ["name", "description"]
    search_fields = ["name"]
    inlines = [GpuModelPriceInline]

    def save_formset(self, request, form, formset, change):
        """Prices edited inline on their cluster are audited like prices edited on their own."""
        if formset.model is not GpuModelPrice:
            return super().save_formset(request, form, formset, change)
        audit.save_prices(request.user, formset)


@admin.register(GpuModelPrice)
class GpuModelPriceAdmin(AuditedAdmin):
    audit_name = "price"

    def audit_details(self, obj) -> dict:
        return audit.price_details(obj)

    list_display = ["cluster", "gpu_model", "price_per_gpu_hour", "currency"]
    list_filter = ["cluster", "currency"]


@admin.register(ExchangeRate)
class ExchangeRateAdmin(AuditedAdmin):
    audit_name = "exchange_rate"

    def audit_details(self, obj) -> dict:
        return audit.rate_details(obj)

    list_display = ["currency", "rate"]


# A job's series as the job page offers it (dashboard:job-series).
SERIES_FORMATS = (("parquet", "Parquet"), ("csv", "CSV"))


class ArtifactInline(admin.TabularInline):
    model = Artifact
    extra = 0
    fields = ["kind", "path", "size", "sha256", "truncated"]
    readonly_fields = fields
    can_delete = False
    show_change_link = True


@admin.register(Job)
class JobAdmin(AuditedAdmin):
    audit_name = "job"
    list_display = [
        "external_id",
        "cluster",
        "team",
        "user",
        "start_time",
        "gpu_count",
        "gpu_hours",
        "mean_gpu_util",
        "unused_gpu_hours",
        "coverage",
    ]
    list_filter = ["cluster", "team", "job_type", "state", "gpu_model"]
    search_fields = ["external_id", "name", "user"]
    date_hierarchy = "start_time"
    list_select_related = ["cluster", "team"]
    readonly_fields = [
        "gpu_hours",
        "mean_gpu_util",
        "peak_gpu_mem_util",
        "unused_gpu_hours",
        "idle_gpu_hours",
        "coverage",
        "sample_count",
        "sampling_period_s",
        "cost",
        "currency",
        "series",
        "fingerprint",
        "ingest_run",
        "created_at",
        "updated_at",
    ]
    # The stored series' name (series_file) would show as a link to the storage's path, which no URL
    # serves: a 404. The job's series downloads instead.
    exclude = ["series_file"]
    inlines = [ArtifactInline]

    @admin.display(description="Series")
    def series(self, job):
        if not job.series_file:
            return "–"
        return format_html_join(
            " · ",
            '<a href="{}">{}</a>',
            ((reverse("dashboard:job-series", args=[job.pk, fmt]), label) for fmt, label in SERIES_FORMATS),
        )

    def get_actions(self, request):
        """Delete selected jobs, in the background (the site-wide action of that name cannot be replaced
        through `actions`: Django keeps the site's)."""
        actions = super().get_actions(request)
        if "delete_selected" in actions:
            actions["delete_selected"] = (delete_selected_jobs, "delete_selected", actions["delete_selected"][2])
        return actions

    def delete_queryset(self, request, queryset):
        """Start the deletion (audited as `job.delete` with the jobs' names once done); delete_selected_jobs
        takes the operator to its page."""
        request.fleet_deletion = lifecycle.delete_chosen_jobs(queryset, request.user)


@admin.register(Artifact)
class ArtifactAdmin(admin.ModelAdmin):
    list_display = ["job", "kind", "path", "size", "truncated"]
    list_filter = ["kind"]
    search_fields = ["job__external_id", "path"]
    raw_id_fields = ["job"]
    # As a job's series: the stored name would link to a path no URL serves; the file's page reads it.
    exclude = ["file"]
    readonly_fields = ["stored_file"]

    def has_add_permission(self, request):
        """A job's files come with its import (its archive or connector), never from a form here."""
        return False

    @admin.display(description="File")
    def stored_file(self, artifact):
        if not artifact.pk or not artifact.file:
            return "–"
        return format_html(
            '<a href="{}">{}</a>', reverse("dashboard:job-file", args=[artifact.job_id, artifact.pk]), artifact.path
        )


@admin.register(LogEvent)
class LogEventAdmin(admin.ModelAdmin):
    list_display = ["job", "kind", "line_no", "timestamp", "text"]
    list_filter = ["kind"]
    search_fields = ["job__external_id", "text"]
    raw_id_fields = ["job", "artifact"]


@admin.register(IngestRun)
class IngestRunAdmin(DeletesWithJobs, AuditedAdmin):
    audit_name = "ingest_run"
    actions = [delete_runs_with_jobs]
    list_display = [
        "id",
        "archive_name",
        "source",
        "status",
        "created_by",
        "created_at",
        "jobs_created",
        "jobs_updated",
        "jobs_unchanged",
        "jobs_rejected",
    ]
    list_filter = ["status", "source"]
    readonly_fields = ["created_at", "started_at", "finished_at"]


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """Read-only: the log is written by fleet.audit.record and never edited."""

    list_display = ["at", "actor_name", "action", "target_repr"]
    list_filter = ["action"]
    # target_id too: an API token's entries are found by its prefix, as the tokens page shows it (older
    # entries' target_id is the library's id, "<prefix>.<the key's hash>", which starts with it).
    search_fields = ["actor_name", "action", "target_repr", "target_id"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
