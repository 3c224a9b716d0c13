"""Issue 39, item 6: what a team trips on while setting up. The no-provider banner points at
the product's Providers page; a webhook the delivery guard would refuse is refused at save;
a new token starts with the read-only scope only; a fresh install's ``access import`` may
name the shipped "General" profile before anyone has chatted."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command

from chat_app.models import Agent, Provider
from platform_app.models import WebhookEndpoint
from platform_app.webhooks.services import WebhookError, endpoint_create

pytestmark = [pytest.mark.django_db]


def test_it_links_the_no_provider_banner_to_the_providers_page(admin_client):
    Provider.objects.all().delete()
    html = admin_client.get("/", follow=True).content.decode()
    assert 'id="no-provider-banner"' in html
    assert 'href="/agents/providers/new/"' in html
    assert "/admin/chat_app/provider" not in html


WEBHOOK = {"name": "ops", "events": ["turn.finished"], "scopes_shown": "1"}


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:9/hook", "http://10.1.2.3/hook", "http://[::1]/hook"]
)
def test_it_refuses_a_private_webhook_at_save_unless_allowed(admin_client, url):
    response = admin_client.post("/webhooks/", {**WEBHOOK, "url": url})
    assert response.status_code == 400
    text = response.content.decode()
    assert "is a private or loopback host" in text and "Allow a private or loopback host" in text
    assert not WebhookEndpoint.objects.exists()
    response = admin_client.post("/webhooks/", {**WEBHOOK, "url": url, "allow_private": "on"})
    assert response.status_code == 302
    assert WebhookEndpoint.objects.get().allow_private


def test_it_refuses_a_metadata_webhook_whatever_the_box_says(admin_user):
    with pytest.raises(WebhookError, match="would be refused: .*cloud metadata"):
        endpoint_create(
            user=admin_user,
            name="m",
            url="http://169.254.169.254/latest/",
            events=["turn.finished"],
            allow_private=True,
        )


def test_it_refuses_a_webhook_edited_to_a_loopback_url(admin_client, admin_user):
    endpoint, _secret = endpoint_create(
        user=admin_user, name="ops", url="https://hooks.invalid/in", events=["turn.finished"]
    )
    response = admin_client.post(
        f"/webhooks/{endpoint.pk}/",
        {"name": "ops", "url": "http://localhost:8000/in", "events": ["turn.finished"]},
    )
    assert response.status_code == 400
    endpoint.refresh_from_db()
    assert endpoint.url == "https://hooks.invalid/in"


def test_it_ticks_only_the_read_only_scope_on_a_new_token(member_client):
    html = member_client.get("/tokens/").content.decode()
    form = html[html.index('aria-label="New token"') :]
    assert 'name="scopes" value="read" checked' in form
    for scope in ("chat", "write", "approve", "mcp"):
        assert f'name="scopes" value="{scope}">' in form, scope


def test_a_fresh_install_imports_grants_of_the_shipped_general_profile(tmp_path: Path):
    Agent.objects.all().delete()  # nobody has opened the chat yet
    path = tmp_path / "access.yaml"
    path.write_text("groups:\n  - name: support\n    agents: [General, Researcher]\n")
    out = io.StringIO()
    call_command("access", "import", str(path), stdout=out)
    general = Agent.objects.get(name="General")
    assert general.is_default
    assert sorted(general.groups.values_list("name", flat=True)) == ["Everyone", "support"]
    assert Agent.objects.get(name="Researcher").groups.filter(name="support").exists()


def test_an_import_still_refuses_a_profile_nobody_ships(tmp_path: Path):
    from django.core.management import CommandError

    path = tmp_path / "access.yaml"
    path.write_text("groups:\n  - name: support\n    agents: [Ghost]\n")
    with pytest.raises(CommandError, match="no agent profile named 'Ghost'"):
        call_command("access", "import", str(path))
    assert not Agent.objects.filter(name="Ghost").exists()


def test_general_is_not_made_again_when_another_profile_is_the_default(tmp_path: Path):
    from django.core.management import CommandError

    Agent.objects.all().delete()
    Agent.objects.create(name="Team default", is_default=True)
    path = tmp_path / "access.yaml"
    path.write_text("groups:\n  - name: support\n    agents: [General]\n")
    with pytest.raises(CommandError, match="no agent profile named 'General'"):
        call_command("access", "import", str(path))
