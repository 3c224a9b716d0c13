"""The Policy page (People → Policy): an admin previews a candidate's replay before anything
changes, applies it (audited as a settings change), runs and stops it as a shadow. A member
reaches none of it; a bad candidate is a clear error and changes nothing."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from platform_app.people.access import access_export
from tests.policy.history import CANDIDATE, seed
from tools_app.models import AuditRecord, ShadowPolicy, ToolConfigVersion

pytestmark = [pytest.mark.django_db, pytest.mark.grants, pytest.mark.modes]

PAGES = [
    ("get", "/people/policy/"),
    ("post", "/people/policy/"),
    ("post", "/people/policy/apply/"),
    ("post", "/people/policy/shadow/"),
    ("post", "/people/policy/shadow/stop/"),
]


@pytest.fixture
def admin_client(org) -> Client:
    org["lee"].is_staff = True
    org["lee"].save()
    client = Client()
    client.force_login(org["lee"])
    return client


def state() -> tuple:
    return (
        access_export(),
        ToolConfigVersion.objects.get().token,
        list(ShadowPolicy.objects.values_list("pk", "stopped_at")),
        AuditRecord.objects.exclude(kind="call").count(),
    )


@pytest.mark.parametrize(("method", "url"), PAGES)
def test_a_member_cannot_reach_the_policy_page_or_its_actions(org, method, url):
    shadow_text = CANDIDATE
    client = Client()
    client.force_login(org["alice"])
    before = state()
    response = getattr(client, method)(url, {"policy": shadow_text, "name": "x"})
    assert response.status_code == 403
    assert state() == before


def test_an_admin_sees_the_replay_before_anything_changes(org, admin_client):
    seed(org)
    page = admin_client.get("/people/policy/")
    assert page.status_code == 200
    assert "name: support" in page.content.decode()  # the live policy, to edit
    before = state()
    response = admin_client.post("/people/policy/", {"policy": CANDIDATE, "days": "7"})
    assert response.status_code == 200
    html = response.content.decode()
    assert "8 would change." in html
    assert response.context["replay"].transitions["approval→denied"] == 2
    assert "Apply" in html and "Run as shadow" in html
    assert state() == before


def test_an_uploaded_file_is_previewed_like_pasted_text(org, admin_client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    seed(org)
    upload = SimpleUploadedFile("candidate.yaml", CANDIDATE.encode(), "text/yaml")
    response = admin_client.post("/people/policy/", {"file": upload, "days": "7"})
    assert response.status_code == 200
    assert response.context["replay"].total == 10


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("groups: [", "not valid YAML"),
        ("groups:\n  - name: support\n    tools: [rm_rf]\n", "line 3: no tool named 'rm_rf'"),
        ("approvals:\n  - {tool: http_request, mode: sometimes}\n", "mode must be one of"),
        ("groups:\n  - name: x\n    shadow: maybe\n", "'shadow' must be true or false"),
        ("- just a list\n", "expected a mapping"),
    ],
)
@pytest.mark.parametrize(
    "url", ["/people/policy/", "/people/policy/apply/", "/people/policy/shadow/"]
)
def test_a_bad_candidate_is_a_clear_error_and_changes_nothing(org, admin_client, text, words, url):
    before = state()
    response = admin_client.post(url, {"policy": text, "days": "7"})
    assert response.status_code == 400
    assert words in response.context["error"]
    assert "Nothing was changed." in response.content.decode()
    assert state() == before


def test_apply_imports_the_candidate_and_audits_it_as_a_settings_change(org, admin_client):
    response = admin_client.post("/people/policy/apply/", {"policy": CANDIDATE})
    assert response.status_code == 302
    assert list(Group.objects.get(name="support").user_set.values_list("username", flat=True)) == [
        "alice"
    ]
    record = AuditRecord.objects.get(kind="settings", group="policy", tool="access")
    assert record.username == "lee"
    assert "eve" in record.detail["before"]["policy"]
    assert "eve" not in record.detail["after"]["policy"]


def test_run_as_shadow_then_stop(org, admin_client):
    response = admin_client.post("/people/policy/shadow/", {"policy": CANDIDATE, "name": "no eve"})
    assert response.status_code == 302
    shadow = ShadowPolicy.objects.get()
    assert shadow.name == "no eve" and shadow.stopped_at is None
    seed(org)
    page = admin_client.get("/people/policy/")
    html = page.content.decode()
    assert "no eve" in html and "Stop shadow" in html
    counts = {(r["before"], r["after"]): r["count"] for r in page.context["shadow_counts"]}
    assert counts[("approval", "denied")] == 2
    assert page.context["shadow_differs"] == 8
    admin_client.post("/people/policy/shadow/stop/")
    shadow.refresh_from_db()
    assert shadow.stopped_at is not None
    assert "Stop shadow" not in admin_client.get("/people/policy/").content.decode()
