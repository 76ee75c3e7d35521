from django.contrib import admin

from fleet import audit
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
    Team,
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


class OwnerInline(admin.TabularInline):
    model = Owner
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Team)
class TeamAdmin(AuditedAdmin):
    audit_name = "team"
    list_display = ["slug", "name"]
    search_fields = ["slug", "name"]
    inlines = [OwnerInline]


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
        "series_file",
        "fingerprint",
        "ingest_run",
        "created_at",
        "updated_at",
    ]
    inlines = [ArtifactInline]


@admin.register(Artifact)
class ArtifactAdmin(admin.ModelAdmin):
    list_display = ["job", "kind", "path", "size", "truncated"]
    list_filter = ["kind"]
    search_fields = ["job__external_id", "path"]
    raw_id_fields = ["job"]


@admin.register(LogEvent)
class LogEventAdmin(admin.ModelAdmin):
    list_display = ["job", "kind", "line_no", "timestamp", "text"]
    list_filter = ["kind"]
    search_fields = ["job__external_id", "text"]
    raw_id_fields = ["job", "artifact"]


@admin.register(IngestRun)
class IngestRunAdmin(AuditedAdmin):
    audit_name = "ingest_run"
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
    search_fields = ["actor_name", "action", "target_repr"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
