"""A real OpenID Connect provider for the SSO tests: a small Django project serving
django-oauth-toolkit's OIDC (authorization code + PKCE, RS256 ID tokens, discovery, JWKS) on
loopback. tests/sso/provider.py starts it; nothing of it is part of the app.

People and their claims come from ``$IDP_DIR/people.json``, read at each login and each token,
so a test changes someone's groups between two logins by rewriting that file."""
