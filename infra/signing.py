"""The HMAC signature our outgoing requests carry (webhooks, filter webhooks).

``X-CC-Signature: t=<timestamp>,v1=<hex>``, where ``<hex>`` is HMAC-SHA256(secret,
"<timestamp>." + body). One function for every sender, so a receiver checks them all alike.
"""

from __future__ import annotations

import hashlib
import hmac


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The ``X-CC-Signature`` value for ``body`` sent at ``timestamp``."""
    digest = hmac.new(
        secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256
    ).hexdigest()
    return f"t={timestamp},v1={digest}"
