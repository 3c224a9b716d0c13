"""Editing a group's settings: validated by its model, errors inline, changes audited."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tests.helpers import GUARD_FORM_DEFAULTS
from tests.tools_manager.conftest import HTMX
from tools_app import selectors
from tools_app.models import AuditRecord, ToolGroupConfig
from tools_app.services.settings import group_settings_save

URL = "/tools/groups/time/edit/"


def test_it_shows_the_form_with_current_values(staff_client):
    page = staff_client.get(URL)
    assert page.status_code == 200
    html = page.content.decode()
    assert 'name="timeout_seconds"' in html and 'value="5"' in html
    assert '<span class="unit">s</span>' in html
    assert "Timezone used when none is given." in html  # the field description as help


def test_it_rejects_an_invalid_value_inline_and_keeps_what_was_typed(staff_client):
    response = staff_client.post(
        URL,
        {
            "timeout_seconds": "999",
            "calls_per_minute": "0",
            "default_timezone": "UTC",
            **GUARD_FORM_DEFAULTS,
        },
        **HTMX,
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="settings-form"' in html and "<html" not in html  # the partial only
    assert "Input should be less than or equal to 60" in html
    assert 'value="999"' in html
    assert not ToolGroupConfig.objects.filter(name="time").exists()
    assert not AuditRecord.objects.exists()


def test_it_saves_a_valid_change_and_records_before_and_after(staff_client, staff_user):
    response = staff_client.post(
        URL,
        {
            "timeout_seconds": "12",
            "calls_per_minute": "0",
            "default_timezone": "Europe/Berlin",
            **GUARD_FORM_DEFAULTS,
        },
        **HTMX,
    )
    assert response.status_code == 200
    assert "Saved: default_timezone, timeout_seconds changed." in response.content.decode()
    settings = selectors.group_settings("time")
    assert settings.timeout_seconds == 12 and settings.default_timezone == "Europe/Berlin"
    record = AuditRecord.objects.get(kind="settings")
    assert record.user == staff_user and record.username == "root" and record.group == "time"
    assert record.detail["before"]["timeout_seconds"] == 5
    assert record.detail["after"]["timeout_seconds"] == 12
    assert record.detail["changed"] == ["default_timezone", "timeout_seconds"]


def test_saving_without_changes_records_nothing(staff_client):
    data = {
        "timeout_seconds": "5",
        "calls_per_minute": "0",
        "default_timezone": "UTC",
        **GUARD_FORM_DEFAULTS,
    }
    staff_client.post(URL, data, **HTMX)
    assert not AuditRecord.objects.exists()


def test_without_htmx_a_save_redirects_to_the_manager_with_a_message(staff_client):
    data = {
        "timeout_seconds": "7",
        "calls_per_minute": "0",
        "default_timezone": "UTC",
        **GUARD_FORM_DEFAULTS,
    }
    response = staff_client.post(URL, data, follow=True)
    assert response.redirect_chain[-1][0] == "/tools/"
    assert "Time settings saved (timeout_seconds)." in response.content.decode()


def test_the_service_validates_and_stores_only_model_fields(staff_user):
    ToolGroupConfig.objects.create(name="time", settings={"obsolete_key": 1})
    with pytest.raises(ValidationError):
        group_settings_save(user=staff_user, group="time", values={"timeout_seconds": 0})
    settings, changed = group_settings_save(
        user=staff_user, group="time", values={"timeout_seconds": 9}
    )
    assert changed == ["timeout_seconds"]
    stored = ToolGroupConfig.objects.get(name="time").settings
    # Secrets (every group's filter_secret) are stored encrypted, apart from the settings.
    expected = settings.model_dump(mode="json", exclude={"filter_secret"})
    assert stored == expected and "obsolete_key" not in stored


def test_an_unknown_group_is_404(staff_client):
    assert staff_client.get("/tools/groups/nope/edit/").status_code == 404
