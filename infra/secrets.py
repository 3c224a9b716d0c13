"""Secrets at rest: one encrypted model field for every credential the app stores.

Provider API keys, MCP server headers and tokens, OpenAPI credentials: all of them are kept in
an ``EncryptedTextField``. Values are encrypted with Fernet (AES-128-CBC + HMAC-SHA256, from
the ``cryptography`` package) before they reach the database and decrypted when a row is
loaded, so code reads plain strings and the database, its backups and its dumps hold tokens.

Keys: ``SECRETS_KEYS`` (comma-separated Fernet keys, the first one encrypts, every one
decrypts), or, when unset, one key derived from ``SECRET_KEY`` with HKDF. Rotation: put a new
key first, keep the old ones after it, run ``manage.py rotate_secrets`` (re-encrypts every
stored secret with the first key), then drop the old keys. See README "Secrets at rest".
"""

from __future__ import annotations

import base64
import functools
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models

# Stored values start with this, so a legacy plain-text value (from before the field was
# encrypted) is recognised and encrypted by the data migration rather than misread.
PREFIX = "fernet:"


class SecretDecryptionError(ValueError):
    """A stored secret cannot be decrypted with any configured key."""


def derived_key(secret_key: str) -> bytes:
    """The Fernet key derived from Django's SECRET_KEY (the default when SECRETS_KEYS is unset)."""
    raw = HKDF(
        algorithm=hashes.SHA256(),
        length=32,
        salt=b"controlcenter.secrets",
        info=b"fernet-key-v1",
    ).derive(secret_key.encode())
    return base64.urlsafe_b64encode(raw)


@functools.cache
def _fernet(keys: tuple[str, ...], secret_key: str) -> MultiFernet:
    if not keys:
        return MultiFernet([Fernet(derived_key(secret_key))])
    fernets = []
    for index, key in enumerate(keys, start=1):
        try:
            fernets.append(Fernet(key.encode()))
        except (ValueError, TypeError) as exc:
            raise ImproperlyConfigured(
                f"SECRETS_KEYS entry {index} is not a Fernet key (32 url-safe base64 bytes; "
                "make one with `manage.py rotate_secrets --new-key`)"
            ) from exc
    return MultiFernet(fernets)


def fernet() -> MultiFernet:
    return _fernet(tuple(settings.SECRETS_KEYS), settings.SECRET_KEY)


def encrypt(value: str) -> str:
    if not value:
        return ""
    return PREFIX + fernet().encrypt(value.encode("utf-8")).decode("ascii")


def decrypt(stored: str) -> str:
    if not stored:
        return ""
    if not stored.startswith(PREFIX):
        return stored  # legacy plain text, encrypted by the next save (or the migration)
    try:
        return fernet().decrypt(stored[len(PREFIX) :].encode("ascii")).decode("utf-8")
    except InvalidToken:
        raise SecretDecryptionError(
            "a stored secret cannot be decrypted: SECRETS_KEYS (or SECRET_KEY) changed without "
            "keeping the old key; put the old key back after the new one in SECRETS_KEYS"
        ) from None


class StoredSecret(str):
    """An already encrypted value, written to the column as it is (key rotation)."""


def rotate(stored: str) -> StoredSecret:
    """Re-encrypt a stored value with the first key (plain legacy values get encrypted)."""
    if not stored:
        return StoredSecret("")
    if not stored.startswith(PREFIX):
        return StoredSecret(encrypt(stored))
    token = fernet().rotate(stored[len(PREFIX) :].encode("ascii"))
    return StoredSecret(PREFIX + token.decode("ascii"))


def new_key() -> str:
    return Fernet.generate_key().decode("ascii")


class EncryptedTextField(models.TextField):
    """A text column whose value is encrypted at rest. Reads and writes plain ``str``.

    Not searchable (every encryption of a value differs); never render it back into a form:
    forms for these fields are write-only (blank keeps the stored value).
    """

    description = "Text encrypted at rest (Fernet)"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("blank", True)
        kwargs.setdefault("default", "")
        super().__init__(*args, **kwargs)

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> str:
        return decrypt(value or "")

    def to_python(self, value: Any) -> str:
        if value is None:
            return ""
        return str(value)

    def get_prep_value(self, value: Any) -> str:
        if isinstance(value, StoredSecret):  # already encrypted (rotate_secrets)
            return str(value)
        value = super().get_prep_value(value)
        if value is None or value == "":
            return ""
        return encrypt(str(value))

    def value_to_string(self, obj: models.Model) -> str:
        # dumpdata / serializers: never the plain value.
        return "***secret***" if self.value_from_object(obj) else ""
