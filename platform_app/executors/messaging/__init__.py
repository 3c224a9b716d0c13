"""Messaging (Utility): send_message into another conversation of the same user, or to a
webhook target an admin named (POSTed through the SSRF-guarded HTTP client). Anything not on
those lists is denied at binding."""
