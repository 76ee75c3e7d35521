from django.contrib import admin

from fleet.models import Artifact, Cluster, GpuModelPrice, IngestRun, Job, LogEvent, Owner, Team


class OwnerInline(admin.TabularInline):
    model = Owner
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
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


@admin.register(GpuModelPrice)
class GpuModelPriceAdmin(admin.ModelAdmin):
    list_display = ["cluster", "gpu_model", "price_per_gpu_hour", "currency"]
    list_filter = ["cluster", "currency"]


class ArtifactInline(admin.TabularInline):
    model = Artifact
    extra = 0
    fields = ["kind", "path", "size", "sha256", "truncated"]
    readonly_fields = fields
    can_delete = False
    show_change_link = True


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
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
class IngestRunAdmin(admin.ModelAdmin):
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
