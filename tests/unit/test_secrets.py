"""Secrets at rest: the encrypted field, the migration of legacy plain values, rotation."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import override_settings

from chat_app.models import Provider
from infra import secrets


def _stored(provider: Provider) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT api_key FROM chat_app_provider WHERE id = %s", [provider.pk])
        return str(cursor.fetchone()[0])


@pytest.mark.django_db
def test_it_stores_provider_keys_encrypted_and_reads_them_plain() -> None:
    provider = Provider.objects.create(name="p", model="m", api_key="sk-live-123456")
    stored = _stored(provider)
    assert stored.startswith(secrets.PREFIX) and "sk-live" not in stored
    assert Provider.objects.get(pk=provider.pk).api_key == "sk-live-123456"


@pytest.mark.django_db
def test_it_keeps_empty_secrets_empty() -> None:
    provider = Provider.objects.create(name="p", model="m")
    assert _stored(provider) == ""
    assert Provider.objects.get(pk=provider.pk).api_key == ""


@pytest.mark.django_db
def test_the_migration_encrypts_legacy_plain_values() -> None:
    import importlib

    from django.apps import apps

    provider = Provider.objects.create(name="p", model="m")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE chat_app_provider SET api_key = 'sk-plain' WHERE id = %s", [provider.pk]
        )
    assert Provider.objects.get(pk=provider.pk).api_key == "sk-plain"  # legacy reads as itself
    migration = importlib.import_module("chat_app.migrations.0005_provider_api_key_encrypted")
    migration.encrypt_keys(apps, connection.schema_editor())
    assert _stored(provider).startswith(secrets.PREFIX)
    assert Provider.objects.get(pk=provider.pk).api_key == "sk-plain"


@pytest.mark.django_db
def test_rotation_re_encrypts_with_the_new_key_and_old_keys_still_decrypt() -> None:
    old = secrets.new_key()
    with override_settings(SECRETS_KEYS=[old]):
        provider = Provider.objects.create(name="p", model="m", api_key="sk-rotate")
        before = _stored(provider)
    new = secrets.new_key()
    with override_settings(SECRETS_KEYS=[new, old]):
        assert Provider.objects.get(pk=provider.pk).api_key == "sk-rotate"
        call_command("rotate_secrets", stdout=open("/dev/null", "w"))  # noqa: SIM115
        after = _stored(provider)
        assert after != before
    with override_settings(SECRETS_KEYS=[new]):  # the old key can go now
        assert Provider.objects.get(pk=provider.pk).api_key == "sk-rotate"


@pytest.mark.django_db
def test_a_missing_key_is_a_clear_error_not_garbage() -> None:
    with override_settings(SECRETS_KEYS=[secrets.new_key()]):
        provider = Provider.objects.create(name="p", model="m", api_key="sk-x")
    with (
        override_settings(SECRETS_KEYS=[secrets.new_key()]),
        pytest.raises(secrets.SecretDecryptionError, match="SECRETS_KEYS"),
    ):
        Provider.objects.get(pk=provider.pk)


def test_a_bad_key_names_the_setting() -> None:
    from django.core.exceptions import ImproperlyConfigured

    with (
        override_settings(SECRETS_KEYS=["not-a-key"]),
        pytest.raises(ImproperlyConfigured, match="SECRETS_KEYS entry 1"),
    ):
        secrets.encrypt("x")


@pytest.mark.django_db
def test_dumps_never_contain_the_plain_secret() -> None:
    import io

    Provider.objects.create(name="p", model="m", api_key="sk-dump-me")
    out = io.StringIO()
    call_command("dumpdata", "chat_app.provider", stdout=out)
    assert "sk-dump-me" not in out.getvalue() and "fernet:" not in out.getvalue()


def test_it_takes_the_keys_from_a_file_outside_var(tmp_path):
    """Issue 20: by default the key is derived from var/secret_key, beside the SQLite database,
    so a copy of var/ decrypts every secret. SECRETS_KEYS_FILE (one key per line, e.g. a
    Docker or systemd secret) keeps the keys elsewhere."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    first, second = secrets.new_key(), secrets.new_key()
    key_file = tmp_path / "keys" / "secrets_keys"
    key_file.parent.mkdir()
    key_file.write_text(f"{first}\n{second}\n")
    var = tmp_path / "var"
    show = "from django.conf import settings; print(','.join(settings.SECRETS_KEYS))"
    proc = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", show],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "CC_VAR_DIR": str(var), "SECRETS_KEYS_FILE": str(key_file)},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == f"{first},{second}"


@pytest.mark.django_db
def test_keys_from_a_file_encrypt_and_rotate(monkeypatch, tmp_path) -> None:
    from infra.env import envlist

    old, new = secrets.new_key(), secrets.new_key()
    key_file = tmp_path / "secrets_keys"
    monkeypatch.setenv("SECRETS_KEYS_FILE", str(key_file))
    key_file.write_text(f"{old}\n")
    with override_settings(SECRETS_KEYS=envlist("SECRETS_KEYS")):
        provider = Provider.objects.create(name="p", model="m", api_key="sk-from-file")
    key_file.write_text(f"{new}\n{old}\n")  # a new key first, the old one kept to decrypt
    with override_settings(SECRETS_KEYS=envlist("SECRETS_KEYS")):
        call_command("rotate_secrets", stdout=open("/dev/null", "w"))  # noqa: SIM115
    key_file.write_text(f"{new}\n")
    with override_settings(SECRETS_KEYS=envlist("SECRETS_KEYS")):
        assert Provider.objects.get(pk=provider.pk).api_key == "sk-from-file"
    with override_settings(SECRETS_KEYS=[]), pytest.raises(secrets.SecretDecryptionError):
        Provider.objects.get(pk=provider.pk)  # var/secret_key no longer decrypts it
