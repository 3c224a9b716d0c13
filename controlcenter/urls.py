from django.contrib import admin
from django.urls import include, path

from controlcenter.health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("chat_app.urls")),
]
