from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("armada.api.urls")),
    path("", include("django_prometheus.urls")),
    path("", include("lookout.urls")),
]
