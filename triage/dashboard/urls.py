from django.urls import path

from . import views

app_name = "dashboard"

urlpatterns = [
    path("overview/", views.overview, name="overview"),
    path("teams/", views.team_list, name="team-list"),
    path("teams/<slug:slug>/", views.team_detail, name="team-detail"),
    path("jobs/<int:pk>/timeline.json", views.job_timeline, name="job-timeline"),
]
