"""The audit signing key (Ed25519): AUDIT_SIGNING_KEY (PEM) when set, else the PEM file
AUDIT_SIGNING_KEY_FILE, created there on the first use (mode 0600, atomically: processes that
share the directory share the key). Separate from SECRET_KEY: rotating one never touches the
other, and its public half is what a security team keeps to verify the audit chain."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
    load_pem_private_key,
)
from django.conf import settings


def _file_read_or_create(path: Path) -> bytes:
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fresh = path.with_name(f".{path.name}.{os.getpid()}")
        pem = Ed25519PrivateKey.generate().private_bytes(
            Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()
        )
        fresh.write_bytes(pem)
        fresh.chmod(0o600)
        try:
            os.link(fresh, path)  # exactly one process's key wins
        except FileExistsError:
            pass
        finally:
            fresh.unlink()
    return path.read_bytes()


@cache
def _load(pem_text: str, path: str) -> Ed25519PrivateKey:
    pem = pem_text.encode() if pem_text else _file_read_or_create(Path(path))
    key = load_pem_private_key(pem, password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError("the audit signing key is not an Ed25519 private key")
    return key


def signing_key() -> Ed25519PrivateKey:
    text = settings.AUDIT_SIGNING_KEY.strip().replace("\\n", "\n")
    return _load(text, str(settings.AUDIT_SIGNING_KEY_FILE))


def public_pem() -> bytes:
    return signing_key().public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
