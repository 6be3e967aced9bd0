from django.contrib import admin
from django.urls import include, path

from armada.auth_forms import admin_login
from armada.web import health, metrics_access
from armada.wire import http_health, swagger

urlpatterns = [
    # The admin's login answers a throttled attempt with 429 and Retry-After (auth_forms).
    path("admin/login/", admin_login),
    path("admin/", admin.site.urls),
    path("api/v1/", include("armada.api.urls")),
    # Armada's REST gateway paths (/v1/job/submit, /v1/queue/{name}, ...): armada.wire.gateway.
    path("v1/", include("armada.wire.gateway")),
    # Not public: a bearer token, a separate address, or development (armada.web.metrics_access).
    path("metrics", metrics_access.metrics, name="prometheus-django-metrics"),
    path("healthz", metrics_access.healthz, name="healthz"),
    # Public too: database, broker and migrations, each bounded (armada.web.health).
    path("readyz", health.readyz, name="readyz"),
    # Armada's: its health check (204, or 503 with the reason) and the gateway's Swagger 2.0.
    path("health", http_health.health_check, name="armada-health"),
    path("swagger.json", swagger.swagger_json, name="armada-swagger"),
    path("", include("lookout.urls")),
]
