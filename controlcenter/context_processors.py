from django.conf import settings
from django.http import HttpRequest


def app(request: HttpRequest) -> dict[str, object]:
    return {"cc_mode": settings.MODE}
