from django.conf import settings
from django.http import HttpRequest


def app(request: HttpRequest) -> dict[str, object]:
    return {
        "cc_mode": settings.MODE,
        "chat_max_message_bytes": settings.CHAT_MAX_MESSAGE_BYTES,
        # OIDC_LOCAL_LOGIN=false: nobody signs in with a password (no Password page to offer).
        "cc_password_login": settings.OIDC_LOCAL_LOGIN,
    }
