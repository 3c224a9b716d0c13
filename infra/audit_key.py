"""The audit signing key (Ed25519) when the operator gives one: AUDIT_SIGNING_KEY (PEM text)
or AUDIT_SIGNING_KEY_FILE (a PEM file, e.g. a mounted secret). Without either, the chain's
sealer uses a key it generated once and keeps in the database encrypted with the keys of
secrets at rest (``tools_app.services.audit_chain.signing_key``): every host of a fleet signs
with the same key, and whoever holds only the database can neither read nor replace it.
Separate from SECRET_KEY either way: its public half is what a security team keeps."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
    load_pem_private_key,
)
from django.conf import settings


def load_private(pem: bytes) -> Ed25519PrivateKey:
    key = load_pem_private_key(pem, password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError("the audit signing key is not an Ed25519 private key")
    return key


@cache
def _configured(pem_text: str, path: str) -> Ed25519PrivateKey | None:
    if pem_text:
        return load_private(pem_text.encode())
    if path:
        return load_private(Path(path).read_bytes())
    return None


def configured_key() -> Ed25519PrivateKey | None:
    text = settings.AUDIT_SIGNING_KEY.strip().replace("\\n", "\n")
    return _configured(text, settings.AUDIT_SIGNING_KEY_FILE)


def new_private_pem() -> str:
    return (
        Ed25519PrivateKey.generate()
        .private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
        .decode()
    )


def public_pem(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
