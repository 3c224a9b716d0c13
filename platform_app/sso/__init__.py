"""Single sign-on over OpenID Connect (issue 22, item 4): client.py talks to the provider through
Authlib, services.py decides what a login does to the accounts, backend.py and views.py wire
them into Django's auth. Off unless OIDC_CLIENT_ID is set (controlcenter/settings.py)."""
