"""The programmatic ways in, for programs acting for a person with an API token:

- ``v1/``: the OpenAI-compatible endpoint (``/v1/models``, ``/v1/chat/completions``), where a
  request runs a governed turn of the token's owner;
- ``rest/``: the REST API under ``/api/`` (django-ninja, OpenAPI at ``/api/openapi.json``);
- ``follow``: following a turn's events on the channel layer (both stream them).

Both authenticate with ``platform_app.api_tokens.api_token_for_request`` (scopes, rate limit)
and answer errors in one shape (``errors``). Everything they do goes through the services
the pages use: binding, grants, approvals, privacy and the audit log have no second path.
"""
