from django.urls import path

from lookout import views

app_name = "lookout"
urlpatterns = [
    path("", views.jobs, name="jobs"),
]
