from django.contrib import admin
from django.urls import include, path

from controlcenter.health import healthz
from tools_app.views import tool_schemas

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("tools/", include("tools_app.urls")),
    path("api/tools/schemas.json", tool_schemas, name="tool-schemas"),
    path("media/screenshots/", include("tools_app.executors.browser.urls")),
    path("", include("chat_app.urls")),
]
