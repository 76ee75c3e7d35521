from django.urls import path

from . import views

app_name = "dashboard"

urlpatterns = [
    path("", views.home, name="home"),
    path("jobs/", views.job_list, name="job-list"),
    path("jobs/<int:pk>/", views.job_detail, name="job-detail"),
    path("overview/", views.overview, name="overview"),
    path("teams/", views.team_list, name="team-list"),
    path("teams/<slug:slug>/", views.team_detail, name="team-detail"),
    path("settings/", views.fleet_settings, name="settings"),
    path("categories/", views.category_list, name="category-list"),
    path("categories/<str:category>/", views.category_detail, name="category-detail"),
    path("jobs/<int:pk>/timeline.json", views.job_timeline, name="job-timeline"),
    path("jobs/<int:pk>/series.<str:fmt>", views.job_series, name="job-series"),
    path("jobs/<int:pk>/files/<int:artifact>/", views.job_file, name="job-file"),
    path("jobs/<int:pk>/files/<int:artifact>/raw", views.job_file_raw, name="job-file-raw"),
]
