from django.urls import path

from triage.labeling import views

app_name = "labeling"

urlpatterns = [
    path("", views.study_list, name="study-list"),
    path("new/", views.study_create, name="study-create"),
    path("<int:pk>/", views.study_detail, name="study"),
    path("<int:pk>/label/", views.label_next, name="label-next"),
    path("<int:pk>/label/<int:item>/", views.label_job, name="label"),
    path("<int:pk>/label/<int:item>/skip/", views.skip_job, name="skip"),
    path("<int:pk>/submit/", views.submit_labels, name="submit"),
    path("<int:pk>/agreement/", views.agreement_page, name="agreement"),
    path("<int:pk>/adjudicate/<int:item>/", views.adjudicate, name="adjudicate"),
    path("<int:pk>/gold/", views.gold_page, name="gold"),
    path("<int:pk>/rules/", views.rules_page, name="rules"),
    path("<int:pk>/rules/triage/", views.triage_missing, name="triage-missing"),
    path("<int:pk>/export/<str:kind>.<str:fmt>", views.export, name="export"),
    path("<int:pk>/import/", views.import_page, name="import"),
]
