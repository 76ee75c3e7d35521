from django.contrib import admin

from .models import Delivery, Subscription


@admin.register(Subscription)
class SubscriptionAdmin(admin.ModelAdmin):
    list_display = ["user", "kind", "team", "active", "updated_at"]
    list_filter = ["kind", "active", "team"]
    search_fields = ["user__username", "user__email", "team__slug"]
    raw_id_fields = ["user"]


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ["iso_week", "kind", "team", "sent_to", "status", "attempts", "sent_at"]
    list_filter = ["status", "kind", "iso_week"]
    search_fields = ["recipient", "webhook__host", "message_id", "last_error"]
    list_select_related = ["team", "webhook"]
    raw_id_fields = ["user", "job", "webhook"]
    readonly_fields = ["claimed_at", "sent_at", "message_id", "attempts", "created_at"]

    @admin.display(description="recipient", ordering="recipient")
    def sent_to(self, delivery: Delivery) -> str:
        """An email's address, or a chat webhook's host (a webhook's post has no address)."""
        return delivery.recipient_label
