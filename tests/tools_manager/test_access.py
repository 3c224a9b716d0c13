"""Staff only everywhere in the Tools Manager and audit log; the schemas API for any user."""

from __future__ import annotations

import pytest
from django.test import Client

from tools_app.models import AuditRecord

PAGES = [
    "/tools/",
    "/tools/groups/time/edit/",
    "/tools/functions/current_time/test/",
    "/tools/audit/",
    "/tools/audit/export.csv",
    "/tools/audit/export.jsonl",
]
POSTS = [
    ("/tools/groups/time/enabled/", {"enabled": "0"}),
    ("/tools/functions/current_time/enabled/", {"enabled": "0"}),
    ("/tools/groups/time/edit/", {"timeout_seconds": "9"}),
    ("/tools/functions/current_time/test/", {}),
]


@pytest.mark.parametrize("url", PAGES)
def test_anonymous_visitors_are_sent_to_the_login_page(url, db):
    response = Client().get(url)
    assert response.status_code == 302 and response.url.startswith("/accounts/login/")


@pytest.mark.parametrize("url", PAGES)
def test_signed_in_non_staff_users_get_403(url, user_client):
    assert user_client.get(url).status_code == 403


@pytest.mark.parametrize(("url", "data"), POSTS)
def test_non_staff_users_cannot_change_anything(url, data, user_client):
    assert user_client.post(url, data).status_code == 403
    assert not AuditRecord.objects.exists()


def test_a_non_staff_user_cannot_open_an_audit_record(user_client, staff_user):
    record = AuditRecord.objects.create(kind="settings", group="time", status="changed")
    assert user_client.get(f"/tools/audit/{record.pk}/").status_code == 403


def test_staff_see_every_page(staff_client):
    for url in PAGES:
        assert staff_client.get(url).status_code == 200, url


def test_the_schemas_api_needs_a_login_but_not_staff(user_client, db):
    assert Client().get("/api/tools/schemas.json").status_code == 401
    response = user_client.get("/api/tools/schemas.json")
    assert response.status_code == 200
    assert "current_time" in [t["function"]["name"] for t in response.json()["tools"]]


def test_the_nav_marks_the_current_section(staff_client):
    html = staff_client.get("/tools/").content.decode()
    assert '<a href="/tools/" aria-current="page">Tools</a>' in html
    html = staff_client.get("/tools/audit/").content.decode()
    assert '<a href="/tools/audit/" aria-current="page">Audit log</a>' in html
