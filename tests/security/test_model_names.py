"""Issue 20, finding 9: ``model`` on schedule_add and subagent_spawn accepted any name, so a
user (or a steered model) could have turns run on any model the endpoint serves. With no list
in the group's settings, a name must be the agent's model, its provider's, or one of the
provider's ``allowed_models``; others are refused at binding, naming what is allowed."""

from __future__ import annotations

import pytest

from chat_app.models import Agent, Conversation, Provider
from platform_app.models import Schedule
from tests.tools.calls import ok, run_tool
from tests.tools.conftest import configure

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def endpoint() -> Provider:
    return Provider.objects.create(
        name="main",
        base_url="http://127.0.0.1:9/v1",
        model="main-model",
        allowed_models=["small-model"],
        is_default=True,
    )


def schedule(user, conversation, name, model, **extra):
    return run_tool(
        "schedule_add",
        user=user,
        conversation_id=conversation.pk,
        name=name,
        cron="0 9 * * *",
        message="Say hi.",
        model=model,
        **extra,
    )


def test_it_refuses_a_model_the_provider_does_not_allow(user, conversation, endpoint):
    call = schedule(user, conversation, "pricey", "gpt-9-ultra")
    assert call.status == "denied"
    assert call.error == (
        "policy: model 'gpt-9-ultra' is not allowed (allowed: main-model, small-model)"
    )
    assert not Schedule.objects.exists()
    spawn = run_tool(
        "subagent_spawn",
        user=user,
        conversation_id=conversation.pk,
        name="pricey",
        message="m",
        model="gpt-9-ultra",
    )
    assert spawn.status == "denied" and "'gpt-9-ultra' is not allowed" in spawn.error


def test_it_accepts_the_configured_and_the_listed_models(user, conversation, endpoint):
    ok(schedule(user, conversation, "default", None))
    ok(schedule(user, conversation, "main", "main-model"))
    ok(schedule(user, conversation, "small", "small-model"))
    result = ok(
        run_tool(
            "subagent_spawn",
            user=user,
            conversation_id=conversation.pk,
            name="small",
            message="m",
            model="small-model",
        )
    )
    assert result["status"] == "started"


def test_an_agents_own_model_is_allowed(user, endpoint):
    agent = Agent.objects.create(name="coder", provider=endpoint, model="code-model")
    coding = Conversation.objects.create(owner=user, agent=agent)
    plain = Conversation.objects.create(owner=user)
    ok(schedule(user, coding, "code", "code-model"))
    assert schedule(user, plain, "code2", "code-model").status == "denied"


def test_the_conversation_the_schedule_runs_in_decides(user, endpoint):
    """With inject_into, the turn runs in that conversation, with its agent's provider."""
    other = Provider.objects.create(name="other", model="other-model", allowed_models=["o-mini"])
    agent = Agent.objects.create(name="other agent", provider=other)
    here = Conversation.objects.create(owner=user)
    there = Conversation.objects.create(owner=user, agent=agent)
    ok(schedule(user, here, "there", "o-mini", inject_into=there.pk))
    refused = schedule(user, here, "here", "o-mini")
    assert (
        refused.error == "policy: model 'o-mini' is not allowed (allowed: main-model, small-model)"
    )


def test_the_groups_own_list_still_decides_when_set(user, conversation, endpoint):
    configure("schedules", allowed_models=["gpt-9-ultra"])
    ok(schedule(user, conversation, "chosen", "gpt-9-ultra"))
    assert schedule(user, conversation, "small", "small-model").status == "denied"


@pytest.mark.parametrize(
    "typed,stored", [("", []), ('["a", " b ", ""]', ["a", "b"]), ('"a"', None), ("[1]", None)]
)
def test_the_admin_form_takes_a_list_of_names(typed, stored):
    from chat_app.forms import ProviderForm

    data = {
        "name": "p",
        "kind": "openai",
        "model": "m",
        "allowed_models": typed,
        "native_tools": "auto",
        "timeout_seconds": 120,
        "max_retries": 3,
        "retry_backoff_seconds": 1.0,
    }
    form = ProviderForm(data=data)
    if stored is None:
        assert "allowed_models" in form.errors
    else:
        assert form.is_valid(), form.errors
        assert form.save().allowed_models == stored
