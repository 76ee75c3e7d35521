from django.urls import path

from triage import views

app_name = "triage"

urlpatterns = [
    path("rules/", views.rule_set_edit, name="rule-set"),
    path("rules/v<int:version>/", views.rule_set_version, name="rule-set-version"),
    path("rules/v<int:version>/restore/", views.rule_set_restore, name="rule-set-restore"),
    path("rules/defaults/", views.rule_set_defaults, name="rule-set-defaults"),
    path("rules/progress/<int:pk>/", views.retriage_progress, name="retriage-progress"),
    path("jobs/<int:pk>/", views.job_triage, name="job"),
    path("jobs/<int:pk>/feedback/", views.job_feedback, name="job-feedback"),
    path("feedback/<int:pk>/remove/", views.feedback_remove, name="feedback-remove"),
]
