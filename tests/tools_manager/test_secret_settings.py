"""Secret settings fields (``SecretStr``, e.g. the Research group's search API key): stored
encrypted, write-only in the form, never shown back, never in the audit log."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection

from tests.helpers import GUARD_FORM_DEFAULTS
from tests.tools_manager.conftest import HTMX
from tools_app import selectors
from tools_app.executors.research.settings import ResearchSettings
from tools_app.models import AuditRecord, ToolConfigVersion, ToolGroupConfig

pytestmark = [pytest.mark.modes]  # the encrypted column is read with a cast: both databases

URL = "/tools/groups/research/edit/"
KEY = "tvly-secret-0a1b2c3d4e5f"


def _form(**changes: str) -> dict[str, str]:
    data = {
        "timeout_seconds": "60",
        "calls_per_minute": "0",
        "search_backend": "tavily",
        "search_url": "https://api.tavily.com",
        "search_api_key": "",
        "search_private_allowed": "",
        "max_results": "10",
        "search_timeout_seconds": "20",
        "max_urls": "5",
        "max_chars_per_page": "10000",
        "page_timeout_seconds": "20",
        **GUARD_FORM_DEFAULTS,
    }
    data.update(changes)
    return data


def _raw_secrets() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT secrets FROM tools_app_toolgroupconfig WHERE name = 'research'")
        return str(cursor.fetchone()[0])


def _stored_key() -> str:
    return selectors.group_settings("research", ResearchSettings).search_api_key.get_secret_value()


def test_the_key_input_is_a_password_field_that_starts_empty(staff_client: Any) -> None:
    html = staff_client.get(URL).content.decode()
    assert 'type="password" name="search_api_key"' in html
    assert "Nothing stored yet." in html
    assert "search_api_key__clear" not in html


def test_a_saved_key_is_encrypted_at_rest_and_never_shown_again(
    staff_client: Any, staff_user: Any
) -> None:
    response = staff_client.post(URL, _form(search_api_key=KEY), **HTMX)
    assert response.status_code == 200
    assert KEY not in response.content.decode()
    assert _stored_key() == KEY
    raw = _raw_secrets()
    assert raw.startswith("fernet:") and KEY not in raw
    assert "search_api_key" not in ToolGroupConfig.objects.get(name="research").settings
    record = AuditRecord.objects.get(kind="settings", group="research")
    assert "search_api_key" in record.detail["changed"]
    assert KEY not in json.dumps(record.detail)
    page = staff_client.get(URL).content.decode()
    assert KEY not in page
    assert "A value is stored (encrypted); leave blank to keep it." in page
    assert 'name="search_api_key__clear"' in page
    manager = staff_client.get("/tools/").content.decode()
    assert KEY not in manager and "Tavily-compatible: api.tavily.com" in manager


def test_a_blank_key_keeps_the_stored_one_and_the_switch_removes_it(staff_client: Any) -> None:
    staff_client.post(URL, _form(search_api_key=KEY), **HTMX)
    staff_client.post(URL, _form(max_results="3"), **HTMX)
    assert _stored_key() == KEY
    assert selectors.group_settings("research", ResearchSettings).max_results == 3
    staff_client.post(URL, _form(max_results="3", search_api_key__clear="on"), **HTMX)
    assert _stored_key() == ""
    assert _raw_secrets() == ""
    changes = [
        r.detail["changed"] for r in AuditRecord.objects.filter(kind="settings").order_by("id")
    ]
    assert changes == [
        ["search_api_key", "search_backend", "search_url"],
        ["max_results"],
        ["search_api_key"],
    ]
    assert KEY not in json.dumps([r.detail for r in AuditRecord.objects.all()])


def test_a_new_key_replaces_the_old_one(staff_client: Any) -> None:
    staff_client.post(URL, _form(search_api_key=KEY), **HTMX)
    staff_client.post(URL, _form(search_api_key="tvly-second-key"), **HTMX)
    assert _stored_key() == "tvly-second-key"


def test_a_secret_that_cannot_be_decrypted_costs_only_that_secret(
    staff_client: Any, caplog: Any
) -> None:
    staff_client.post(URL, _form(search_api_key=KEY, max_results="4"), **HTMX)
    with connection.cursor() as cursor:  # as if SECRETS_KEYS lost the key it was written with
        cursor.execute(
            "UPDATE tools_app_toolgroupconfig SET secrets = 'fernet:not-a-token' "
            "WHERE name = 'research'"
        )
    ToolConfigVersion.bump()
    settings = selectors.group_settings("research", ResearchSettings)
    assert settings.search_api_key.get_secret_value() == ""
    assert settings.max_results == 4
    assert selectors.group_settings("time").timeout_seconds == 5
    assert "the secrets of tool group research cannot be decrypted" in caplog.text
