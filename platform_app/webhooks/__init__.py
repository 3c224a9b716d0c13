"""Webhooks: admin-registered endpoints told of events, signed, retried, logged
(``services``); the events come from signals and registration points (``receivers``); the
admin pages are ``views``."""
