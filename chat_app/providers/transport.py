"""What a broken HTTP transport raises past the SDKs' own errors.

The SDKs stream over their aiohttp transport (``DefaultAioHttpClient``), which renames the
aiohttp errors it knows as httpx's and lets the others through: a malformed response start (a
header line over aiohttp's 8 KB, a status line that is not HTTP) arrives as aiohttp's own
``ClientResponseError``, which OpenAI's SDK does not wrap. Imported by the adapters only (they
are loaded on first use, with their SDK, which imports aiohttp anyway).
"""

from __future__ import annotations

import aiohttp
import httpx2

TRANSPORT_ERRORS: tuple[type[Exception], ...] = (httpx2.TransportError, aiohttp.ClientError)
