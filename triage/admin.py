from django.contrib import admin

from fleet.admin import AuditedAdmin
from triage import feedback
from triage.models import Feedback


@admin.register(Feedback)
class FeedbackAdmin(AuditedAdmin):
    """Job owners' answers, for operators looking through them in bulk (the job page removes one)."""

    audit_name = "feedback"
    list_display = ["job", "category", "verdict", "user", "updated_at"]
    list_filter = ["verdict", "category"]
    search_fields = ["comment", "user__username", "job__external_id", "job__name"]
    list_select_related = ["job__cluster", "user"]

    # Answers are people's own words: operators may read and take one down, not write or edit one.
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def audit_details(self, obj) -> dict:
        return feedback.audited(obj)
