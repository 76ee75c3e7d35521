from django.urls import path, re_path

from . import views

app_name = "digests"

WEEK = r"(?P<week>\d{4}-W\d{2})"

urlpatterns = [
    path("", views.index, name="index"),
    re_path(rf"^preview/team/(?P<slug>[-\w]+)/{WEEK}/$", views.preview_team, name="preview-team"),
    re_path(rf"^preview/operator/{WEEK}/$", views.preview_operator, name="preview-operator"),
    path("deliveries/", views.delivery_list, name="deliveries"),
    path("deliveries/<int:pk>/retry/", views.delivery_retry, name="delivery-retry"),
    path("settings/", views.subscription_settings, name="settings"),
    path("alerts/", views.alert_settings, name="alert-settings"),
    re_path(r"^alerts/webhooks/(?P<slug>[-\w]+)/$", views.alert_webhook, name="alert-webhook"),
    re_path(r"^alerts/webhooks/(?P<slug>[-\w]+)/test/$", views.alert_webhook_test, name="alert-webhook-test"),
    path("unsubscribe/<str:token>/", views.unsubscribe, name="unsubscribe"),
]
