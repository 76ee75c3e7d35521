from django.urls import path

from fleet.connectors import views

app_name = "connectors"

urlpatterns = [
    path("", views.connector_list, name="list"),
    path("new/", views.connector_create, name="create"),
    path("<int:pk>/", views.connector_detail, name="detail"),
    path("<int:pk>/edit/", views.connector_edit, name="edit"),
    path("<int:pk>/delete/", views.connector_delete, name="delete"),
    path("<int:pk>/sync/", views.connector_sync, name="sync"),
    path("<int:pk>/check/", views.connector_check, name="check"),
    path("deletions/<int:pk>/", views.deletion_detail, name="deletion"),
    path("deletions/<int:pk>/status.json", views.deletion_status, name="deletion-status"),
]
