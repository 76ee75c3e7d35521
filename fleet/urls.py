from django.urls import path

from fleet import views
from fleet.connectors import views as connector_views

app_name = "fleet"

urlpatterns = [
    path("ingest-runs/", views.ingest_run_list, name="ingest-run-list"),
    path("ingest-runs/upload/", views.ingest_upload, name="ingest-upload"),
    path("docs/archive-format/", views.archive_format, name="archive-format"),
    path("ingest-runs/<int:pk>/", views.ingest_run_detail, name="ingest-run-detail"),
    path("ingest-runs/<int:pk>/status.json", views.ingest_run_status, name="ingest-run-status"),
    path("ingest-runs/<int:pk>/requeue/", views.ingest_run_requeue, name="ingest-run-requeue"),
    path("ingest-runs/<int:pk>/fail/", views.ingest_run_fail, name="ingest-run-fail"),
    path("ingest-runs/<int:pk>/errors.csv", views.ingest_run_errors_csv, name="ingest-run-errors-csv"),
    # A deletion's progress page, of any kind (a team's, an ingest run's, jobs chosen in the admin).
    path("deletions/<int:pk>/", connector_views.deletion_detail, name="deletion"),
    path("deletions/<int:pk>/status.json", connector_views.deletion_status, name="deletion-status"),
    path("tokens/", views.token_list, name="token-list"),
    path("tokens/<str:prefix>/edit/", views.token_edit, name="token-edit"),
    path("tokens/<str:prefix>/revoke/", views.token_revoke, name="token-revoke"),
    path("tokens/personal/<str:prefix>/revoke/", views.personal_token_revoke, name="personal-token-revoke"),
    path("audit/", views.audit_log, name="audit-log"),
    path("healthz", views.healthz, name="healthz"),
    path("favicon.ico", views.site_icon, name="site-icon"),
]
