"""What the chat page shows from the apps above the chat.

The chat knows nothing of schedules or reports; an app above it registers a function at
``ready()`` that adds its panels to the conversation page's context.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest

from chat_app.models import Conversation

Panels = Callable[[HttpRequest, Conversation], dict[str, Any]]
_panels: dict[str, Panels] = {}


def page_panels_register(name: str, panels: Panels) -> None:
    """``panels(request, conversation)`` returns template context for the conversation page;
    registering a name again replaces it."""
    _panels[name] = panels


def page_panels(request: HttpRequest, conversation: Conversation) -> dict[str, Any]:
    context: dict[str, Any] = {}
    for panels in _panels.values():
        context.update(panels(request, conversation))
    return context
