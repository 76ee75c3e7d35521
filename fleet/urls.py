from django.urls import path

from fleet import views

app_name = "fleet"

urlpatterns = [
    path("", views.home, name="home"),
    path("jobs/", views.job_list, name="job-list"),
    path("jobs/<int:pk>/", views.job_detail, name="job-detail"),
    path("ingest-runs/", views.ingest_run_list, name="ingest-run-list"),
    path("ingest-runs/<int:pk>/", views.ingest_run_detail, name="ingest-run-detail"),
    path("healthz", views.healthz, name="healthz"),
]
