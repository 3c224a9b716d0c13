from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import browser  # noqa: F401  (fixture)
from tests.sso.provider import CLIENT_ID, OIDCProvider, run_oidc_provider


@pytest.fixture(scope="session")
def oidc_provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OIDCProvider]:
    """The real OIDC provider process (django-oauth-toolkit) on 127.0.0.1, RS256 keys."""
    with run_oidc_provider(tmp_path_factory.mktemp("oidc-provider")) as provider:
        yield provider


@pytest.fixture
def sso_settings(settings: Any, oidc_provider: OIDCProvider) -> Any:
    """This process's settings pointed at the provider, as the environment would set them."""
    settings.OIDC_CLIENT_ID = CLIENT_ID
    settings.OIDC_CLIENT_SECRET = oidc_provider.client_secret
    settings.OIDC_ISSUER = oidc_provider.issuer
    settings.OIDC_DISCOVERY_URL = oidc_provider.discovery_url
    settings.OIDC_ENABLED = True
    settings.OIDC_PROVIDER_NAME = "Test IdP"
    settings.OIDC_GROUP_MAP = {"cc-support": ["support"], "cc-admins": ["admins", "support"]}
    settings.OIDC_STAFF_GROUPS = ["cc-admins"]
    return settings
