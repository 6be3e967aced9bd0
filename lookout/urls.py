from django.urls import path

from lookout import views

app_name = "lookout"
urlpatterns = [
    path("", views.jobs, name="jobs"),
    path("jobs/<str:job_id>", views.job_detail, name="job"),
]
