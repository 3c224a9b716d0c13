"""Messaging (Utility): send_message into another conversation of the same user, to a
webhook target an admin named, or to a Telegram chat on the admin's allow-list (both POSTed
through the SSRF-guarded HTTP client). Anything not on those lists is denied at binding."""
