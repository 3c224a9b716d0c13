"""The Usage page and its CSV: admins see everyone's figures, anyone else only their own
(every figure, the CSV included); quotas and prices are the admins', and each change is
audited; a CSV cell cannot become a spreadsheet formula."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone

from chat_app.models import ModelPrice, UsageRecord, UsageRecordGroup
from platform_app.models import Quota
from tests.helpers import logged_in
from tools_app.models import AuditRecord, ToolCall


def record(user, *, model="gpt-test", tokens=(100, 10), cost="0.5", days_ago=0, group=None):
    at = timezone.now() - timedelta(days=days_ago)
    row = UsageRecord.objects.create(
        user=user,
        username=user.username,
        model=model,
        agent_name="General",
        source="chat",
        input_tokens=tokens[0],
        output_tokens=tokens[1],
        cost=Decimal(cost),
        priced=True,
        created_at=at,
        duration_ms=900,
        first_token_ms=300,
    )
    if group is not None:
        UsageRecordGroup.objects.create(
            record=row, group=group, created_at=at, tokens=sum(tokens), cost=Decimal(cost)
        )
    return row


@pytest.fixture
def people(db):
    users = get_user_model().objects
    admin = users.create_user("ada", password="pw-ada-12345", is_staff=True)
    ivy = users.create_user("ivy", password="pw-ivy-12345")
    bob = users.create_user("bob", password="pw-bob-12345")
    support = Group.objects.create(name="support")
    ivy.groups.add(support)
    record(ivy, tokens=(1000, 100), cost="1.25", group=support)
    record(bob, model='=HYPERLINK("http://evil")', tokens=(5000, 500), cost="9.00")
    record(ivy, tokens=(7, 7), cost="0", days_ago=40)  # outside the last 30 days
    ToolCall.objects.create(tool="current_time", user=ivy, status="succeeded", duration_ms=12)
    ToolCall.objects.create(tool="shell_exec", user=bob, status="failed", duration_ms=40)
    return admin, ivy, bob


def test_an_admin_sees_everyone_by_person_group_model_and_tool(people):
    admin, ivy, bob = people
    page = logged_in(admin).get("/usage/").content.decode()
    assert "$10.25" in page  # 1.25 + 9.00, not the round 40 days ago
    assert "By person" in page and "By group" in page and ">bob<" in page and ">ivy<" in page
    assert "support" in page and "shell_exec" in page and "current_time" in page


def test_a_member_sees_only_their_own_figures(people):
    admin, ivy, bob = people
    page = logged_in(ivy).get("/usage/?range=90").content.decode()
    assert "$1.25" in page and "$9" not in page
    assert "By person" not in page and "By group" not in page
    assert "shell_exec" not in page and "bob" not in page
    rows = list(
        csv.reader(
            io.StringIO(
                b"".join(
                    logged_in(ivy).get("/usage/export.csv?range=90").streaming_content
                ).decode()
            )
        )
    )
    assert [r[1] for r in rows[1:]] == ["ivy", "ivy"]
    calls = b"".join(
        logged_in(ivy).get("/usage/export.csv?range=7&what=tools").streaming_content
    ).decode()
    assert "current_time" in calls and "shell_exec" not in calls


def test_the_csv_keeps_a_formula_a_cell_as_text(people):
    admin, _, _ = people
    response = logged_in(admin).get("/usage/export.csv?range=7")
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0][:3] == ["time_utc", "person", "groups"]
    models = {r[5] for r in rows[1:]}
    assert '\'=HYPERLINK("http://evil")' in models  # quoted: a spreadsheet shows it as text
    assert any(r[2] == "support" for r in rows[1:])


def test_nonsense_in_the_range_falls_back_to_thirty_days(people):
    admin, _, _ = people
    response = logged_in(admin).get("/usage/?from=2024-13-99&to=<b>x</b>")
    assert response.status_code == 200
    page = response.content.decode()
    assert "<b>x</b>" not in page and "Last 30 days" in page
    assert 'href="/usage/export.csv?from=' in page


def test_quotas_and_prices_are_for_admins_and_every_change_is_audited(people):
    admin, ivy, _ = people
    assert logged_in(ivy).get("/usage/limits/").status_code == 403
    assert logged_in(ivy).post("/usage/limits/", {"quota-target": "user:1"}).status_code == 403
    support = Group.objects.get(name="support")
    admin_client = logged_in(admin)
    response = admin_client.post(
        "/usage/limits/",
        {
            "quota-target": f"group:{support.pk}",
            "quota-metric": "cost",
            "quota-period": "day",
            "quota-limit": "5",
        },
        follow=True,
    )
    assert "Quota saved" in response.content.decode()
    assert Quota.objects.get(group=support).limit == 5
    refused = admin_client.post(
        "/usage/limits/",
        {
            "quota-target": f"group:{support.pk}",
            "quota-metric": "tokens",
            "quota-period": "day",
            "quota-limit": "",
        },
        follow=True,
    ).content.decode()
    assert "a group&#x27;s quota needs a limit" in refused
    admin_client.post(
        "/usage/limits/",
        {
            "price-model": "gpt-test",
            "price-input_per_million": "2.5",
            "price-output_per_million": "10",
            "price-cached_per_million": "",
        },
    )
    assert ModelPrice.objects.get(model="gpt-test").input_per_million == Decimal("2.5")
    quota = Quota.objects.get(group=support)
    delete = f"/usage/limits/quotas/{quota.pk}/delete/"
    assert logged_in(ivy).post(delete).status_code == 403  # a member cannot remove it
    assert Quota.objects.filter(pk=quota.pk).exists()
    changes = AuditRecord.objects.filter(kind="settings", group="usage")
    assert sorted(changes.values_list("tool", flat=True)) == ["price", "quota"]
    page = admin_client.get("/usage/").content.decode()
    assert "support group" in page and "$1.25 of $5" in page  # the meter of the group's day
