"""Core memory: a few facts per user, in two sections, always in the system prompt."""

from __future__ import annotations

import pytest

from platform_app.memory.services import memory_core_prompt
from platform_app.prompt import platform_prompt
from tests.tools.calls import ok, run_tool
from tests.tools.conftest import configure

pytestmark = [pytest.mark.modes, pytest.mark.django_db(transaction=True)]


def test_update_and_get_per_section(user):
    ok(run_tool("memory_core_update", user=user, section="user", key="name", value="Alice"))
    ok(run_tool("memory_core_update", user=user, section="agent", key="name", value="Orbit"))
    changed = ok(
        run_tool("memory_core_update", user=user, section="user", key="name", value="Alice B.")
    )
    assert changed["previous"] == "Alice"
    core = ok(run_tool("memory_core_get", user=user))
    assert core["user"] == {"name": "Alice B."}
    assert core["agent"] == {"name": "Orbit"}
    assert core["characters"] == len("name") * 2 + len("Alice B.") + len("Orbit")


def test_delete_per_section(user):
    ok(run_tool("memory_core_update", user=user, section="user", key="city", value="Oslo"))
    ok(run_tool("memory_core_update", user=user, section="agent", key="city", value="Lyon"))
    deleted = ok(run_tool("memory_core_delete", user=user, section="user", key="city"))
    assert deleted["deleted"] == "Oslo"
    core = ok(run_tool("memory_core_get", user=user))
    assert core["user"] == {} and core["agent"] == {"city": "Lyon"}


def test_deleting_a_missing_key_is_an_error(user):
    ok(run_tool("memory_core_update", user=user, section="user", key="name", value="Alice"))
    call = run_tool("memory_core_delete", user=user, section="user", key="nickname")
    assert call.status == "failed"
    assert call.error == "there is no key 'nickname' in the user section; its keys are: name"
    call = run_tool("memory_core_delete", user=user, section="agent", key="name")
    assert call.error == "there is no key 'name' in the agent section; it is empty"


def test_an_unknown_section_is_refused_by_the_schema(user):
    call = run_tool("memory_core_update", user=user, section="system", key="k", value="v")
    assert (
        call.status == "failed" and "'section'" in call.error and "'user' or 'agent'" in call.error
    )


def test_the_size_cap_is_a_clear_error(user):
    configure("memory", core_max_chars=100)
    ok(run_tool("memory_core_update", user=user, section="user", key="bio", value="x" * 80))
    call = run_tool("memory_core_update", user=user, section="agent", key="style", value="y" * 30)
    assert call.status == "failed"
    assert call.error.startswith("core memory would hold 118 characters; the limit is 100.")
    assert ok(run_tool("memory_core_get", user=user))["agent"] == {}  # nothing half-written


def test_users_do_not_share_core_memory(user, other_user):
    ok(run_tool("memory_core_update", user=other_user, section="user", key="pin", value="1234"))
    assert ok(run_tool("memory_core_get", user=user))["user"] == {}
    call = run_tool("memory_core_delete", user=user, section="user", key="pin")
    assert call.status == "failed"


def test_core_memory_is_in_the_prompt_block(user):
    assert memory_core_prompt(user.pk) == ""
    ok(run_tool("memory_core_update", user=user, section="user", key="name", value="Alice"))
    ok(run_tool("memory_core_update", user=user, section="agent", key="tone", value="brief"))
    block = memory_core_prompt(user.pk)
    assert block.startswith("## Core memory")
    assert "About the user:\n- name: Alice" in block
    assert "About you (the agent):\n- tone: brief" in block
    assert "- name: Alice" in platform_prompt(user_id=user.pk, conversation_id=None)


def test_switching_memory_off_takes_it_out_of_the_prompt(user):
    from tools_app.models import ToolGroupConfig

    ok(run_tool("memory_core_update", user=user, section="user", key="name", value="Alice"))
    configure("memory", core_in_prompt=False)
    assert "Alice" not in platform_prompt(user_id=user.pk, conversation_id=None)
    configure("memory", core_in_prompt=True)
    ToolGroupConfig.objects.filter(name="memory").update(enabled=False)
    assert "Alice" not in platform_prompt(user_id=user.pk, conversation_id=None)
