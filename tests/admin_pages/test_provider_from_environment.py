"""B6: LLM_* at start updates the environment's provider and makes it the default, and the
log says so, even when an admin made another provider the default."""

from __future__ import annotations

import logging

import pytest

from chat_app.models import Provider
from chat_app.services.providers import provider_default, provider_seed_from_env


def _env(settings: pytest.FixtureRequest, **over: object) -> None:
    settings.LLM = {  # type: ignore[attr-defined]
        "provider": "openai",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key": "sk-env-1",
        "model": "env-model",
        "native_tools": "auto",
        "timeout": 30.0,
        **over,
    }


def test_llm_env_updates_the_seeded_provider_and_makes_it_the_default(settings, db, caplog):
    _env(settings)
    seeded = provider_seed_from_env()
    assert seeded is not None
    # An admin renames the seeded provider and makes their own the default.
    Provider.objects.filter(pk=seeded.pk).update(name="Company gateway", is_default=False)
    Provider.objects.create(name="admin's", kind="openai", model="m", is_default=True)
    _env(settings, model="env-model-2", api_key="sk-env-2")
    caplog.set_level(logging.INFO, logger="chat_app.services.providers")

    again = provider_seed_from_env()

    assert again is not None and again.pk == seeded.pk
    assert Provider.objects.count() == 2  # no second, unused provider
    assert list(Provider.objects.filter(is_default=True)) == [again]
    current = provider_default()
    assert current is not None and current.pk == seeded.pk
    assert current.name == "Company gateway" and current.model == "env-model-2"
    assert current.api_key == "sk-env-2"
    log = caplog.text
    assert "updated provider 'Company gateway'" in log and "model" in log
    assert 'now the default instead of "admin\'s"' in log
    assert "sk-env-2" not in log


def test_restarting_with_the_same_env_changes_nothing_and_logs_nothing(settings, db, caplog):
    _env(settings)
    provider_seed_from_env()
    caplog.set_level(logging.INFO, logger="chat_app.services.providers")
    caplog.clear()
    provider_seed_from_env()
    assert Provider.objects.count() == 1 and caplog.text == ""


def test_a_provider_seeded_before_the_marker_is_found_by_its_name(settings, db):
    from importlib import import_module

    from django.apps import apps

    Provider.objects.create(name="default (from environment)", kind="openai", model="old")
    import_module("chat_app.migrations.0013_provider_from_environment").mark_seeded(apps, None)
    _env(settings)
    provider_seed_from_env()
    assert Provider.objects.get().model == "env-model"
