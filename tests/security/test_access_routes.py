"""Every way in goes through a named check of the access module (``infra.access``): each URL
pattern's view carries its rule, each REST operation authenticates a token with a scope, each
websocket consumer names its rule (and checks the principal again on every frame), and the
ASGI surfaces outside Django's URLs (``/v1``, ``/mcp/``) authenticate tokens the same way.

A new view without a rule fails here: decorate it with ``access.signed_in``, ``access.staff``,
``access.public("why")`` or ``access.token("why")``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib import admin
from django.urls import URLPattern, URLResolver, get_resolver

from infra import access

# Django's own views that the project mounts as they are, with what guards them.
THIRD_PARTY = {
    # Django's admin: every view is wrapped by AdminSite.admin_view (active staff only).
    "django.contrib.admin": "AdminSite.admin_view: active staff",
    # Sign-out, password change and reset: Django's views; the change needs a login (the
    # middleware), reset works by e-mailed one-time links.
    "django.contrib.auth.views": "Django's auth views",
}


def _walk(patterns: list[Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            if pattern.namespace == admin.site.name or (
                getattr(pattern, "app_name", None) == "admin"
            ):
                continue  # AdminSite.admin_view guards each (checked below)
            yield from _walk(pattern.url_patterns, prefix + str(pattern.pattern))
        else:
            assert isinstance(pattern, URLPattern)
            yield prefix + str(pattern.pattern), pattern.callback


def _rule(callback: Any) -> Any:
    rule = getattr(callback, "access", None)
    if rule is None and hasattr(callback, "view_class"):  # class-based views
        rule = getattr(callback.view_class, "access", None)
    return rule


def test_it_marks_every_url_pattern_with_a_rule() -> None:
    unmarked = []
    for route, callback in _walk(get_resolver().url_patterns):
        module = getattr(callback, "__module__", "") or ""
        if getattr(callback, "__self__", None) is not None and hasattr(
            callback.__self__, "get_view"
        ):
            continue
        if any(module.startswith(name) for name in THIRD_PARTY):
            continue
        if module.startswith("ninja."):
            continue  # the REST operations: checked one by one below
        rule = _rule(callback)
        if not isinstance(rule, access.Rule) or rule.name not in access.RULES:
            unmarked.append(f"{route} → {module}.{getattr(callback, '__qualname__', callback)}")
        elif rule.name in (access.PUBLIC, access.TOKEN):
            assert rule.why, f"{route}: a {rule.name} view says why"
    assert not unmarked, "views without an access rule:\n" + "\n".join(unmarked)


@pytest.mark.django_db
def test_it_keeps_every_admin_page_for_staff(client: Any, django_user_model: Any) -> None:
    """Django's admin guards its own pages (``AdminSite.admin_view``): a member is sent to
    the admin's login for each model's list."""
    from django.contrib.admin.sites import site
    from django.urls import reverse

    member = django_user_model.objects.create_user("member-admin-walk", password="x")
    client.force_login(member)
    assert site._registry
    for model in site._registry:
        meta = model._meta
        url = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
        response = client.get(url)
        assert response.status_code == 302 and "/admin/login/" in response["Location"], url


def test_it_authenticates_every_rest_operation_with_a_scoped_token() -> None:
    from platform_app.api.rest.api import api
    from platform_app.api.rest.base import TokenAuth

    operations = 0
    for _prefix, router in api._routers:
        for path_view in router.path_operations.values():
            for operation in path_view.operations:
                operations += 1
                auth = operation.auth_callbacks
                assert auth, f"{operation.view_func.__name__}: no authentication"
                assert all(isinstance(a, TokenAuth) and a.scope for a in auth), (
                    f"{operation.view_func.__name__}: not a scoped token"
                )
    assert operations > 30


def test_it_names_a_rule_for_every_websocket_route() -> None:
    from controlcenter.asgi import application
    from infra.websocket import SafeJsonConsumer

    router = application.application_mapping["websocket"]
    # AllowedHostsOriginValidator → AuthMiddlewareStack → LanguageMiddleware → URLRouter
    inner = router
    while not hasattr(inner, "routes"):
        inner = getattr(inner, "inner", None) or inner.application
    assert inner.routes
    for route in inner.routes:
        consumer = route.callback.consumer_class
        assert issubclass(consumer, SafeJsonConsumer), consumer  # the per-frame check
        rule = getattr(consumer, "access", None)
        assert isinstance(rule, access.Rule) and rule.name in access.RULES, consumer


@pytest.mark.parametrize("path", ["/v1/models", "/mcp/"])
def test_it_authenticates_the_asgi_surfaces(client: Any, path: str) -> None:
    """``/v1`` and ``/mcp/`` live outside Django's URLs: without a token they answer 401."""
    import asyncio

    from controlcenter.asgi import application

    async def call() -> int:
        status: list[int] = []
        scope = {
            "type": "http",
            "method": "GET" if path.startswith("/v1") else "POST",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "headers": [(b"host", b"testserver"), (b"content-type", b"application/json")],
            "client": ("127.0.0.1", 1),
            "server": ("testserver", 80),
            "scheme": "http",
            "http_version": "1.1",
            "root_path": "",
        }
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": b"{}", "more_body": False}
            await asyncio.sleep(3600)
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])

        await application(scope, receive, send)
        return status[0]

    assert asyncio.run(call()) == 401
