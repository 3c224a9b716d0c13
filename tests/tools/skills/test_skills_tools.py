"""skill_list and skill_load: SKILL.md from the data directory and from the conversation
workspace's skills/ (the workspace wins a name clash); names and descriptions in the prompt."""

from __future__ import annotations

import os
import random

import pytest

from platform_app.prompt import platform_prompt, skills_prompt
from tests.tools.calls import ok, run_tool
from tests.tools.conftest import clear_directory, configure
from tools_app.runtime import workspace_dir_for

pytestmark = [pytest.mark.django_db(transaction=True)]


def skill(folder, name: str, description: str, body: str = "Do it well.\n") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}")


@pytest.fixture(autouse=True)
def _without_shipped_skills(transactional_db):
    # Most tests here are about the data directory and workspaces alone.
    configure("skills", shipped_skills=False)


@pytest.fixture
def data_dir(tmp_path, settings):
    settings.SKILLS_DIR = tmp_path / "skills"
    skill(settings.SKILLS_DIR / "release", "release-notes", "Write release notes from git log.")
    skill(settings.SKILLS_DIR / "review", "code-review", "Review a diff.", "Data version.\n")
    return settings.SKILLS_DIR


@pytest.fixture
def workspace(user):
    """(conversation id, its workspace): a conversation of ``user`` with a fresh workspace."""
    from chat_app.models import Conversation

    conversation_id = random.SystemRandom().randrange(10**9, 2 * 10**9)
    Conversation.objects.create(pk=conversation_id, owner=user)
    path = workspace_dir_for(f"c{conversation_id}")
    yield conversation_id, path
    clear_directory(path)


def test_it_lists_data_skills(user, data_dir):
    result = ok(run_tool("skill_list", user=user))
    assert [(s["name"], s["source"]) for s in result["skills"]] == [
        ("code-review", "data"),
        ("release-notes", "data"),
    ]
    assert result["skills"][1]["description"] == "Write release notes from git log."


def test_it_loads_the_full_text(user, data_dir):
    loaded = ok(run_tool("skill_load", user=user, name="release-notes"))
    assert loaded["instructions"] == "Do it well.\n"
    assert loaded["path"] == "release/SKILL.md"


def test_loading_an_unknown_skill_is_an_error(user, data_dir):
    call = run_tool("skill_load", user=user, name="nope")
    assert call.status == "failed"
    assert call.error == "unknown skill 'nope'; the skills are: code-review, release-notes"


def test_a_workspace_skill_overrides_a_data_skill(user, data_dir, workspace):
    conversation_id, path = workspace
    skill(path / "skills" / "my-review", "code-review", "Review like this team.", "Ours.\n")
    skill(path / "skills" / "deploy", "deploy", "Deploy this project.")
    listed = ok(run_tool("skill_list", user=user, conversation_id=None))
    # No conversation (a Test button): the user's own test workspace, which has no skills/.
    assert {s["name"]: s["source"] for s in listed["skills"]}["code-review"] == "data"
    listed = ok(run_tool("skill_list", user=user, conversation_id=conversation_id))
    by_name = {s["name"]: s for s in listed["skills"]}
    assert by_name["code-review"]["source"] == "workspace"
    assert by_name["code-review"]["overrides"] == "data"
    assert by_name["deploy"]["path"] == "skills/deploy/SKILL.md"
    loaded = ok(
        run_tool("skill_load", user=user, conversation_id=conversation_id, name="code-review")
    )
    assert loaded["instructions"] == "Ours.\n" and loaded["source"] == "workspace"


def test_workspace_skills_can_be_switched_off(user, data_dir, workspace):
    conversation_id, path = workspace
    skill(path / "skills" / "deploy", "deploy", "Deploy this project.")
    configure("skills", workspace_skills=False)
    names = [
        s["name"]
        for s in ok(run_tool("skill_list", user=user, conversation_id=conversation_id))["skills"]
    ]
    assert "deploy" not in names


def test_only_names_and_descriptions_go_into_the_prompt(user, data_dir, workspace):
    conversation_id, path = workspace
    skill(path / "skills" / "deploy", "deploy", "Deploy   this\n  project.", "SECRET STEPS\n")
    block = skills_prompt(user_id=user.pk, conversation_id=conversation_id)
    assert block.startswith("## Skills")
    assert "- deploy (workspace): Deploy this project." in block
    assert "- release-notes: Write release notes from git log." in block
    assert "SECRET STEPS" not in block and "Do it well" not in block
    assert "## Skills" in platform_prompt(user_id=user.pk, conversation_id=conversation_id)
    assert "## Skills" not in platform_prompt(
        user_id=user.pk, conversation_id=conversation_id, offered={"memory_search"}
    )


def test_broken_skills_are_reported_not_offered(user, data_dir):
    (data_dir / "broken").mkdir()
    (data_dir / "broken" / "SKILL.md").write_text("no frontmatter here")
    skill(data_dir / "bad-name", "Bad Name!", "x")
    (data_dir / "yaml").mkdir()
    (data_dir / "yaml" / "SKILL.md").write_text("---\nname: [unclosed\n---\n")
    result = ok(run_tool("skill_list", user=user))
    assert [s["name"] for s in result["skills"]] == ["code-review", "release-notes"]
    problems = " | ".join(result["problems"])
    assert "broken/SKILL.md: no YAML frontmatter" in problems
    assert "bad-name/SKILL.md: name must be" in problems
    assert "yaml/SKILL.md: invalid YAML frontmatter" in problems


def test_skills_are_listed_in_the_tools_manager(client, staff_user, data_dir):
    client.force_login(staff_user)
    page = client.get("/tools/").content.decode()
    assert "<code>release-notes</code> — Write release notes from git log." in page
    assert "Skills offered (2)" in page


class TestUntrustedWorkspaceSkills:
    """The workspace is written by the model: links, huge files and odd files are refused."""

    def test_a_symlinked_skill_file_is_refused(self, user, data_dir, workspace, tmp_path):
        conversation_id, path = workspace
        outside = tmp_path / "outside.md"
        outside.write_text("---\nname: leak\ndescription: leaked host file\n---\nHOST SECRET\n")
        (path / "skills" / "leak").mkdir(parents=True)
        (path / "skills" / "leak" / "SKILL.md").symlink_to(outside)
        result = ok(run_tool("skill_list", user=user, conversation_id=conversation_id))
        assert "leak" not in [s["name"] for s in result["skills"]]
        call = run_tool("skill_load", user=user, conversation_id=conversation_id, name="leak")
        assert call.status == "failed" and "HOST SECRET" not in str(call.result)

    def test_a_symlinked_skills_folder_is_refused(self, user, data_dir, workspace, tmp_path):
        conversation_id, path = workspace
        elsewhere = tmp_path / "elsewhere"
        skill(elsewhere / "leak", "leak", "from outside the workspace", "HOST SECRET\n")
        os.symlink(elsewhere, path / "skills")
        result = ok(run_tool("skill_list", user=user, conversation_id=conversation_id))
        assert "leak" not in [s["name"] for s in result["skills"]]
        assert any("workspace: 'skills' is a symbolic link" in p for p in result["problems"])

    def test_a_symlinked_skill_folder_is_skipped(self, user, data_dir, workspace, tmp_path):
        conversation_id, path = workspace
        skill(tmp_path / "elsewhere", "leak", "from outside", "HOST SECRET\n")
        (path / "skills").mkdir()
        os.symlink(tmp_path / "elsewhere", path / "skills" / "leak")
        result = ok(run_tool("skill_list", user=user, conversation_id=conversation_id))
        assert "leak" not in [s["name"] for s in result["skills"]]

    def test_a_hard_linked_skill_file_is_refused(self, user, data_dir, workspace, tmp_path):
        conversation_id, path = workspace
        outside = tmp_path / "outside.md"
        outside.write_text("---\nname: leak\ndescription: hard link\n---\nHOST SECRET\n")
        (path / "skills" / "leak").mkdir(parents=True)
        os.link(outside, path / "skills" / "leak" / "SKILL.md")
        result = ok(run_tool("skill_list", user=user, conversation_id=conversation_id))
        assert "leak" not in [s["name"] for s in result["skills"]]
        assert any("hard-linked" in p for p in result["problems"])

    def test_an_oversized_skill_is_refused(self, user, data_dir, workspace):
        conversation_id, path = workspace
        configure("skills", max_skill_bytes=2048)
        skill(path / "skills" / "huge", "huge", "big", "x" * 5000)
        result = ok(run_tool("skill_list", user=user, conversation_id=conversation_id))
        assert "huge" not in [s["name"] for s in result["skills"]]
        assert any("the limit is 2,048" in p for p in result["problems"])

    def test_a_fifo_does_not_hang_the_listing(self, user, data_dir, workspace):
        conversation_id, path = workspace
        (path / "skills" / "pipe").mkdir(parents=True)
        os.mkfifo(path / "skills" / "pipe" / "SKILL.md")
        result = ok(run_tool("skill_list", user=user, conversation_id=conversation_id))
        assert "pipe" not in [s["name"] for s in result["skills"]]

    def test_a_long_description_is_cut_in_the_prompt(self, user, data_dir, workspace):
        conversation_id, path = workspace
        skill(path / "skills" / "long", "long", "word " * 150)
        block = skills_prompt(user_id=user.pk, conversation_id=conversation_id)
        line = next(x for x in block.splitlines() if x.startswith("- long"))
        assert len(line) < 330 and line.endswith("…")


def test_the_shipped_skills_are_offered_and_a_data_skill_replaces_one(user, data_dir):
    # Seeds 000 and 002: skills for testing, git operations and memory come with the app.
    configure("skills", shipped_skills=True)
    listed = {s["name"]: s for s in ok(run_tool("skill_list", user=user))["skills"]}
    for name in ("testing", "git-ops", "memory"):
        assert listed[name]["source"] == "shipped", listed[name]
    testing = ok(run_tool("skill_load", user=user, name="testing"))
    assert "run_tests(" in testing["instructions"] and "returncode" in testing["instructions"]
    assert "git_commit(" in ok(run_tool("skill_load", user=user, name="git-ops"))["instructions"]
    memory = ok(run_tool("skill_load", user=user, name="memory"))["instructions"]
    assert "**Save** when" in memory and "**Search** when" in memory
    skill(data_dir / "ours", "testing", "Our own way to test.", "Use tox.\n")
    listed = {s["name"]: s for s in ok(run_tool("skill_list", user=user))["skills"]}
    assert listed["testing"]["source"] == "data" and listed["testing"]["overrides"] == "shipped"
    assert ok(run_tool("skill_load", user=user, name="testing"))["instructions"] == "Use tox.\n"
    assert "- memory: When to save to memory" in skills_prompt(
        user_id=user.pk, conversation_id=None
    )


def test_an_edited_skill_is_read_again_and_a_broken_one_stays_reported(tmp_path):
    # The catalogue is read on every model round; each file is parsed once per version.
    from platform_app.skills import skill_catalogue

    def catalogue():
        return skill_catalogue(
            data_dir=tmp_path, workspace_dir=None, max_bytes=65536, max_skills=50
        )

    skill(tmp_path / "a", "alpha", "First words.")
    assert catalogue().skills["alpha"].description == "First words."
    skill(tmp_path / "a", "alpha", "Second, longer words.")
    assert catalogue().skills["alpha"].description == "Second, longer words."
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "SKILL.md").write_text("no frontmatter\n")
    for _ in range(2):
        assert any("no YAML frontmatter" in p for p in catalogue().problems)
