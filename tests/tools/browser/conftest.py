"""Fixtures for the browser tool tests: real Chromium (``CHROMIUM_PATH``, or Playwright's own),
real local servers, and the real call path (``toolcall_bind`` + ``toolcall_execute`` in this
process, whose browser pool is the one under test)."""

from __future__ import annotations

import random
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.conf import settings

from tests.helpers import require
from tests.tools.browser.pages import pages_for
from tests.tools.browser.site import Site, serving
from tools_app.models import ToolCall, ToolGroupConfig
from tools_app.runtime import BindContext
from tools_app.services.binding import CallRequest, toolcall_bind
from tools_app.services.execution import toolcall_execute

PAGE_HOST, VICTIM_HOST, OTHER_HOST = "127.0.0.1", "127.0.0.2", "127.0.0.3"
DEFAULTS: dict[str, Any] = {
    "allowed_domains": [PAGE_HOST],
    "private_allowed": [PAGE_HOST, OTHER_HOST],
    "timeout_seconds": 15,
}


def configure(**values: Any) -> None:
    """The Browser group's settings as an admin saves them (validated: a typo fails here)."""
    from tools_app.executors.browser.settings import BrowserSettings

    merged = {**DEFAULTS, **values}
    BrowserSettings.model_validate(merged)
    ToolGroupConfig.objects.update_or_create(name="browser", defaults={"settings": merged})


@pytest.fixture(scope="session")
def chromium() -> str:
    """The Chromium the pool will use; missing fails under CI=true."""
    from tools_app.executors.browser.chromium import resolve_executable

    try:
        executable = resolve_executable()
    except Exception as exc:
        require(False, f"Chromium is not usable: {exc}")
        raise
    require(shutil.which(executable.shown) is not None, f"Chromium not found at {executable.shown}")
    return executable.shown


@pytest.fixture(scope="session")
def victim() -> Iterator[Site]:
    with serving(VICTIM_HOST) as site:
        yield site


@pytest.fixture(scope="session")
def other() -> Iterator[Site]:
    with serving(OTHER_HOST) as site:
        yield site


@pytest.fixture(scope="session")
def site(victim: Site, other: Site) -> Iterator[Site]:
    with serving(PAGE_HOST, pages_for(victim, other)) as server:
        yield server


@pytest.fixture(autouse=True)
def _clean_slate(site: Site, victim: Site, other: Site) -> Iterator[None]:
    """No context or saved state survives from one test to the next (the warm browser does)."""
    from tools_app.executors.browser import handoff
    from tools_app.executors.browser.pool import existing_pool

    pool = existing_pool()
    if pool is not None:
        pool.reap(context_idle=-1, browser_idle=float("inf"))
    shutil.rmtree(handoff.sessions_dir(), ignore_errors=True)
    for server in (site, victim, other):
        server.reset()
    yield


@dataclass
class Browser:
    """Calls browser tools as one user in one conversation."""

    user: Any
    conversation: Any

    @property
    def workspace_id(self) -> str:
        return f"c{self.conversation.pk}"

    def call(self, tool: str, /, **arguments: Any) -> ToolCall:
        call = toolcall_bind(
            request=CallRequest(tool=tool, arguments=arguments),
            ctx=BindContext(
                user_id=self.user.pk, conversation_id=self.conversation.pk, source="api"
            ),
        )
        if call.status == ToolCall.Status.QUEUED:
            toolcall_execute(tool_call_id=call.pk)
            call.refresh_from_db()
        return call

    def ok(self, tool: str, /, **arguments: Any) -> dict[str, Any]:
        call = self.call(tool, **arguments)
        assert call.status == ToolCall.Status.SUCCEEDED, (call.status, call.result)
        assert call.result is not None
        return call.result


def new_conversation(user: Any) -> Any:
    from chat_app.models import Conversation

    # Random ids: a context is keyed by the conversation, and ids restart after a flush.
    return Conversation.objects.create(
        pk=random.randint(10**6, 2 * 10**9), owner=user, title="browser test"
    )


@pytest.fixture
def owner(transactional_db: None) -> Any:
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user("browser-owner")


@pytest.fixture
def browser(owner: Any, chromium: str) -> Browser:
    configure()
    return Browser(owner, new_conversation(owner))


@pytest.fixture
def media_dir() -> Any:
    return settings.MEDIA_DIR
