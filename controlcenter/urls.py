from django.contrib import admin
from django.urls import include, path

from controlcenter.health import healthz
from tools_app.views import tool_schemas
from tools_app.views_tokens import token_decide, token_revoke, tokens

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("tools/", include("tools_app.urls")),
    path("api/tools/schemas.json", tool_schemas, name="tool-schemas"),
    path("tokens/", tokens, name="tokens"),
    path("tokens/<int:token_id>/revoke/", token_revoke, name="token-revoke"),
    path("tokens/calls/<int:call_id>/decide/", token_decide, name="token-decide"),
    path("media/screenshots/", include("tools_app.executors.browser.urls")),
    path("", include("chat_app.urls")),
]
