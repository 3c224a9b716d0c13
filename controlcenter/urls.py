from django.contrib import admin
from django.urls import include, path

from chat_app.health import healthz
from tools_app.manager.views import tool_schemas

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("tools/", include("tools_app.manager.urls")),
    path("api/tools/schemas.json", tool_schemas, name="tool-schemas"),
    path("media/screenshots/", include("tools_app.executors.browser.urls")),
    path("", include("platform_app.urls")),
    path("", include("chat_app.urls")),
]
