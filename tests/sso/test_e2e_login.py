"""SSO in Chromium: the app server (``manage.py serve``) configured from the environment, the
real provider process on loopback, a person pressing "Sign in with ..." and signing in at the
provider. Group membership is read back from the database the server writes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from tests.e2e.conftest import run_app_server
from tests.sso.provider import OIDCProvider

pytestmark = pytest.mark.e2e

GROUP_MAP = "cc-admins=admins,cc-admins=support,cc-support=support"


@pytest.fixture(scope="module")
def sso_server(django_db_setup: Any, oidc_provider: OIDCProvider) -> Iterator[str]:
    env = oidc_provider.app_env(
        OIDC_PROVIDER_NAME="Acme ID", OIDC_GROUP_MAP=GROUP_MAP, OIDC_STAFF_GROUPS="cc-admins"
    )
    with run_app_server("--no-beat", log_name="test-sso-server.log", **env) as url:
        yield url


@pytest.fixture(scope="module")
def sso_only_server(django_db_setup: Any, oidc_provider: OIDCProvider) -> Iterator[str]:
    env = oidc_provider.app_env(OIDC_PROVIDER_NAME="Acme ID", OIDC_LOCAL_LOGIN="false")
    with run_app_server("--no-beat", log_name="test-sso-only-server.log", **env) as url:
        yield url


def new_page(browser: Any, base_url: str) -> Any:
    context = browser.new_context(base_url=base_url, viewport={"width": 1280, "height": 860})
    page = context.new_page()
    page.set_default_timeout(15_000)
    return page


def sign_in_at_provider(page: Any, provider: OIDCProvider, username: str, password: str) -> None:
    page.get_by_role("link", name="Sign in with Acme ID").click()
    page.wait_for_url(f"{provider.url}/login/**")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in to the provider").click()


def wait_in_app(page: Any, server: str) -> None:
    """Back in the app, signed in ("/" opens a conversation)."""
    page.wait_for_url(lambda url: url.startswith(f"{server}/c/"))


def groups_of(username: str) -> tuple[set[str], bool]:
    user = get_user_model().objects.get(username=username)
    return set(user.groups.values_list("name", flat=True)), user.is_staff


def test_an_sso_login_maps_groups_and_a_later_login_follows_the_claim(
    browser: Any, sso_server: str, oidc_provider: OIDCProvider, transactional_db: None
) -> None:
    password = oidc_provider.person("olga", email="olga@example.com", groups=["cc-admins"])
    page = new_page(browser, sso_server)
    page.goto("/tokens/")
    page.wait_for_url("**/accounts/login/?next=/tokens/")
    sign_in_at_provider(page, oidc_provider, "olga", password)
    page.wait_for_url(f"{sso_server}/tokens/")
    assert page.locator(".whoami .username").inner_text() == "olga"
    assert page.get_by_role("link", name="Tools").is_visible()  # staff, from cc-admins
    assert groups_of("olga") == ({"admins", "support"}, True)

    # The provider now lists only cc-support: the next login removes admins and staff.
    oidc_provider.person("olga", password=password, groups=["cc-support"])
    page.locator(".user-menu summary").click()  # Log out is in the user menu
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url("**/accounts/login/")
    page.get_by_role("link", name="Sign in with Acme ID").click()  # the provider remembers her
    wait_in_app(page, sso_server)
    assert groups_of("olga") == ({"support"}, False)
    assert page.get_by_role("link", name="Tools").count() == 0
    page.context.close()


def test_with_local_login_off_only_the_provider_signs_people_in(
    browser: Any, sso_only_server: str, oidc_provider: OIDCProvider, staff_user: Any
) -> None:
    page = new_page(browser, sso_only_server)
    page.goto("/accounts/login/")
    assert page.get_by_role("link", name="Sign in with Acme ID").is_visible()
    assert page.get_by_label("Password").count() == 0
    # A password posted anyway (the form is gone, a script is not) is refused.
    csrf = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    for path in ("/accounts/login/", "/admin/login/"):
        response = page.request.post(
            f"{sso_only_server}{path}",
            form={"username": "root", "password": "root-password-1", "csrfmiddlewaretoken": csrf},
            headers={"Referer": f"{sso_only_server}{path}"},
            max_redirects=0,
        )
        assert response.status == 403, path
    page.goto("/admin/")
    page.wait_for_url("**/accounts/login/?next=/admin/")

    password = oidc_provider.person("pat", groups=[])
    page.goto("/accounts/login/")
    sign_in_at_provider(page, oidc_provider, "pat", password)
    wait_in_app(page, sso_only_server)
    assert page.locator(".whoami .username").inner_text() == "pat"
    page.context.close()
