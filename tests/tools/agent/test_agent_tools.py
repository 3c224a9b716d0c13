"""The Agent tools through the real path (bind + execute in this process): strict schemas,
create_report's file (names, size limit, links), its download and listing; clarification
outside a chat turn."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import jsonschema
import pytest

from tests.tools.calls import ok, run_tool
from tests.tools.conftest import configure
from tools_app.executors import load_all
from tools_app.models import ToolCall
from tools_app.registry import GROUPS, TOOLS
from tools_app.runtime import workspace_dir_for, workspace_id_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.modes]

AGENT_TOOLS = {
    "reasoning",
    "generate_plan",
    "adapt_plan",
    "clarification",
    "final_answer",
    "create_report",
}
REPORT = (
    "# Jaguar sales\n\nSales grew 5% [1] while costs fell [2]; analysts agree [1] [3].\n\n"
    "## Sources\n[1] https://a.example/r\n[2] https://b.example/r\n[3] https://c.example/r\n"
)


@pytest.fixture
def workspace(conversation) -> Path:
    path = workspace_dir_for(workspace_id_for(conversation_id=conversation.pk, user_id=None))
    shutil.rmtree(path / "reports", ignore_errors=True)
    if (path / "reports").is_symlink():
        (path / "reports").unlink()
    return path


def report(user, conversation, **overrides) -> ToolCall:
    args = {
        "reasoning": "All three sources agree.",
        "title": "Jaguar sales 2025",
        "user_request_language_reference": "jaguar sales",
        "content": REPORT,
        "confidence": "high",
        **overrides,
    }
    return run_tool("create_report", user=user, conversation_id=conversation.pk, **args)


def test_it_registers_the_agent_group_with_the_contracted_tools():
    load_all()
    assert {t.tool_name for t in GROUPS["agent"].tools} == AGENT_TOOLS
    assert GROUPS["agent"].label == "Agent"


@pytest.mark.parametrize("name", sorted(AGENT_TOOLS))
def test_it_offers_valid_strict_schemas(name):
    tool = TOOLS[name]
    function = tool.openai_schema(strict=True)["function"]
    assert function["strict"] is True
    parameters = function["parameters"]
    jsonschema.Draft202012Validator.check_schema(parameters)
    assert parameters["additionalProperties"] is False
    assert set(parameters["required"]) == set(parameters["properties"])
    jsonschema.validate(tool.model_validate(tool.example()).model_dump(mode="json"), parameters)


def test_it_keeps_the_contracted_bounds():
    def props(name):
        return TOOLS[name].openai_schema(strict=True)["function"]["parameters"]["properties"]

    r = props("reasoning")
    assert (r["reasoning_steps"]["minItems"], r["reasoning_steps"]["maxItems"]) == (2, 3)
    assert r["current_situation"]["maxLength"] == 300
    assert r["plan_status"]["maxLength"] == 150
    assert (r["remaining_steps"]["minItems"], r["remaining_steps"]["maxItems"]) == (1, 3)
    assert TOOLS["reasoning"].model_fields["enough_data"].default is False
    c = props("clarification")
    assert c["reasoning"]["maxLength"] == 200
    assert [(c[k]["minItems"], c[k]["maxItems"]) for k in ("unclear_terms", "assumptions")] == [
        (1, 3),
        (2, 3),
    ]
    assert (c["questions"]["minItems"], c["questions"]["maxItems"]) == (1, 3)
    f = props("final_answer")
    assert (f["completed_steps"]["minItems"], f["completed_steps"]["maxItems"]) == (1, 5)
    assert f["status"]["enum"] == ["completed", "failed"]
    assert props("create_report")["confidence"]["enum"] == ["high", "medium", "low"]
    # Seed 004's plan tools, field for field.
    g = props("generate_plan")
    assert list(g) == ["reasoning", "research_goal", "planned_steps", "search_strategies"]
    assert (g["planned_steps"]["minItems"], g["planned_steps"]["maxItems"]) == (3, 4)
    assert (g["search_strategies"]["minItems"], g["search_strategies"]["maxItems"]) == (2, 3)
    a = props("adapt_plan")
    assert list(a)[:5] == ["reasoning", "original_goal", "new_goal", "plan_changes", "next_steps"]
    assert (a["plan_changes"]["minItems"], a["plan_changes"]["maxItems"]) == (1, 3)
    assert (a["next_steps"]["minItems"], a["next_steps"]["maxItems"]) == (2, 4)


def test_the_plan_tools_still_take_their_old_argument_names(user):
    made = ok(
        run_tool(
            "generate_plan",
            user=user,
            reasoning="why",
            goal="Compare A and B",
            steps=["Find A", "Find B", "Compare"],
            search_strategies=["reports", "news"],
        )
    )
    assert made["research_goal"] == "Compare A and B"
    assert made["planned_steps"] == ["Find A", "Find B", "Compare"]
    adapted = ok(
        run_tool(
            "adapt_plan",
            user=user,
            reasoning="A is done",
            changes=["A found"],
            goal=None,
            steps=["Find A", "Find B", "Compare"],
            done_steps=[1],
        )
    )
    assert adapted["plan_changes"] == ["A found"] and adapted["new_goal"] == ""
    assert adapted["next_steps"] == ["Find B", "Compare"]


def test_it_refuses_arguments_outside_the_bounds(user):
    call = run_tool(
        "reasoning",
        user=user,
        reasoning_steps=["only one"],
        current_situation="x" * 301,
        plan_status="ok",
        remaining_steps=["a"],
        task_completed=False,
    )
    assert call.status == "failed"
    assert "'reasoning_steps'" in call.error and "'current_situation'" in call.error


def test_it_writes_the_report_and_returns_its_metadata(user, conversation, workspace):
    result = ok(report(user, conversation))
    name = result["file_name"]
    assert re.fullmatch(r"\d{8}_\d{6}_Jaguar_sales_2025\.md", name)
    assert result["path"] == f"reports/{name}"
    assert result["title"] == "Jaguar sales 2025"
    assert result["word_count"] == len(REPORT.split())
    assert result["sources_count"] == 3
    assert result["timestamp"].startswith("20")
    assert (workspace / "reports" / name).read_text() == REPORT


@pytest.mark.parametrize(
    "title, expected",
    [
        ("../../etc/passwd", "etc_passwd"),
        ("/abs/..\\..\\x", "abs_x"),
        ("ÄÖ über…", "AO_uber"),
        ("....", "report"),
        ("a" * 200, "a" * 80),
    ],
)
def test_it_makes_safe_file_names_from_hostile_titles(
    user, conversation, workspace, title, expected
):
    name = ok(report(user, conversation, title=title))["file_name"]
    assert name.endswith(f"_{expected}.md")
    assert os.listdir(workspace / "reports") == [name]


def test_it_never_overwrites_a_report_written_in_the_same_second(user, conversation, workspace):
    names = {ok(report(user, conversation))["file_name"] for _ in range(3)}
    assert len(names) == 3
    assert len(os.listdir(workspace / "reports")) == 3


def test_it_refuses_a_symlinked_reports_folder(user, conversation, workspace, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "reports").symlink_to(outside)
    call = report(user, conversation)
    assert call.status == "denied"
    assert "symbolic link" in call.error
    assert list(outside.iterdir()) == []


def test_it_refuses_a_report_over_the_size_limit(user, conversation, workspace):
    configure("agent", max_report_bytes=1000)
    call = report(user, conversation, content="word " * 400)
    assert call.status == "denied"
    assert "the limit is 1,000" in call.error
    assert not (workspace / "reports").exists()


def test_clarification_outside_a_turn_fails_with_clear_words(user):
    call = run_tool("clarification", user=user, **TOOLS["clarification"].example())
    assert call.status == "failed"
    assert "needs a chat turn" in call.error


def test_the_owner_downloads_and_lists_the_report(client, user, conversation, workspace):
    name = ok(report(user, conversation))["file_name"]
    client.force_login(user)
    response = client.get(f"/c/{conversation.pk}/reports/{name}")
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="{name}"'
    assert response.content.decode() == REPORT
    listing = client.get(f"/c/{conversation.pk}/reports/").content.decode()
    assert name in listing


@pytest.mark.parametrize(
    "name",
    ["..%2F..%2Fsettings.py", "../x.md", "%2e%2e/x.md", "x.md", "20260101_000000_a.md.txt"],
)
def test_the_download_refuses_names_that_are_not_reports(client, user, conversation, name):
    client.force_login(user)
    assert client.get(f"/c/{conversation.pk}/reports/{name}").status_code == 404


def test_the_download_refuses_a_planted_link(client, user, conversation, workspace, tmp_path):
    secret = tmp_path / "secret.md"
    secret.write_text("secret")
    (workspace / "reports").mkdir()
    (workspace / "reports" / "20260101_000000_secret.md").symlink_to(secret)
    client.force_login(user)
    response = client.get(f"/c/{conversation.pk}/reports/20260101_000000_secret.md")
    assert response.status_code == 404
    assert (
        "20260101_000000_secret"
        not in client.get(f"/c/{conversation.pk}/reports/").content.decode()
    )


def test_the_download_refuses_a_symlinked_reports_folder(
    client, user, conversation, workspace, tmp_path
):
    (tmp_path / "20260101_000000_secret.md").write_text("secret")
    (workspace / "reports").symlink_to(tmp_path)
    client.force_login(user)
    assert client.get(f"/c/{conversation.pk}/reports/20260101_000000_secret.md").status_code == 404


def test_another_user_cannot_download_the_report(client, user, other_user, conversation, workspace):
    name = ok(report(user, conversation))["file_name"]
    client.force_login(other_user)
    assert client.get(f"/c/{conversation.pk}/reports/{name}").status_code == 404
    assert client.get(f"/c/{conversation.pk}/reports/").status_code == 404


def test_the_card_offers_the_download_only_for_a_conversation_report(user, conversation, workspace):
    from django.template.loader import render_to_string

    in_chat = report(user, conversation)
    html = render_to_string("tools/_toolcall_card.html", {"call": in_chat})
    assert f'href="/c/{conversation.pk}/reports/{in_chat.result["file_name"]}"' in html
    assert f"{in_chat.result['word_count']} words · 3 sources" in html
    tested = run_tool("create_report", user=user, **TOOLS["create_report"].example())
    html = render_to_string("tools/_toolcall_card.html", {"call": ok(tested) and tested})
    assert "report-download" not in html and "Report:" in html


def _reasonings(value: object) -> list[str]:
    """Every ``reasoning`` key anywhere in a JSON value."""
    if isinstance(value, dict):
        return [k for k in value if k == "reasoning"] + [
            r for v in value.values() for r in _reasonings(v)
        ]
    if isinstance(value, list):
        return [r for v in value for r in _reasonings(v)]
    return []


def test_the_plan_tools_return_the_plan_without_the_reasoning(user, conversation):
    # Seed 004: "returns the JSON of the plan (excluding the reasoning field)".
    made = ok(
        run_tool(
            "generate_plan",
            user=user,
            conversation_id=conversation.pk,
            reasoning="the secret why of the plan",
            research_goal="Compare A and B",
            planned_steps=["Find A", "Find B", "Compare"],
            search_strategies=["reports", "news"],
        )
    )
    assert _reasonings(made) == [] and "secret why" not in str(made)
    assert made["plan"]["goal"] == "Compare A and B"
    assert [s["text"] for s in made["plan"]["steps"]] == ["Find A", "Find B", "Compare"]
    adapted = ok(
        run_tool(
            "adapt_plan",
            user=user,
            conversation_id=conversation.pk,
            reasoning="the secret why of the change",
            original_goal="Compare A and B",
            new_goal="Compare A and B",
            plan_changes=["A found"],
            next_steps=["Find B", "Compare"],
            done_steps=[1],
        )
    )
    assert _reasonings(adapted) == [] and "secret why" not in str(adapted)
    assert adapted["plan"]["changes"][-1]["changes"] == ["A found"]
    # The call itself keeps what the model wrote (card, trace, audit).
    call = ToolCall.objects.filter(tool="adapt_plan").latest("pk")
    assert "secret why of the change" in (call.reasoning + str(call.arguments))
