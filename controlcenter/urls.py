from django.contrib import admin
from django.urls import include, path, re_path

from chat_app.health import healthz
from chat_app.readiness import healthz_live, healthz_ready
from infra import access
from infra.metrics import metrics_view
from platform_app.api.rest.api import api as rest_api
from platform_app.api.rest.api import unknown_path as rest_unknown_path
from platform_app.preferences.views import js_catalog
from platform_app.sso.views import admin_login
from tools_app.manager.views import tool_schemas

# The REST API's own pages (its OpenAPI document, the docs page, its index) describe the API and
# read nothing; every operation authenticates a scoped token (tests/security/test_access_routes).
rest_urls = rest_api.urls
for _pattern in rest_urls[0]:
    _view = getattr(_pattern, "callback", None)
    if _view is not None and not _view.__module__.startswith("ninja.operation"):
        access.public("the REST API's description: reads no data")(_view)

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("healthz/live", healthz_live, name="healthz-live"),
    path("healthz/ready", healthz_ready, name="healthz-ready"),
    path("metrics", metrics_view, name="metrics"),
    # Before the admin's own: the admin login obeys OIDC_LOCAL_LOGIN like the login page.
    path("admin/login/", admin_login),
    path("admin/", admin.site.urls),
    path("accounts/", include("platform_app.sso.urls")),  # login page (first) and SSO steps
    # Before Django's own: /accounts/password/ and the one-time /accounts/set-password/ links.
    path("accounts/", include("platform_app.people.account_urls")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("people/", include("platform_app.people.urls")),
    path("preferences/", include("platform_app.preferences.urls")),
    path("jsi18n/<str:language>.js", js_catalog, name="js-catalog"),
    path("usage/", include("platform_app.usage.urls")),
    path("", include("tools_app.connections.urls")),  # /connections/, a source's credentials
    path("tools/", include("tools_app.manager.urls")),
    path("agents/", include("chat_app.admin_pages.urls")),
    path("api/tools/schemas.json", tool_schemas, name="tool-schemas"),
    # The REST API (platform_app/api/rest): token-authenticated, OpenAPI at /api/openapi.json.
    path("api/", rest_urls),
    re_path(r"^api/", rest_unknown_path),
    path("media/screenshots/", include("tools_app.executors.browser.urls")),
    path("", include("platform_app.urls")),
    path("", include("chat_app.urls")),
]
