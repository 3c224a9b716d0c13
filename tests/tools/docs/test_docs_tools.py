"""docs_list, docs_search and docs_read over the project's own docs/ and an admin's folder."""

from __future__ import annotations

from uuid import uuid4

import pytest

from tests.helpers import wait_for
from tests.tools.calls import ok, run_tool
from tests.tools.conftest import configure

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def handbook(tmp_path):
    root = tmp_path / "handbook"
    (root / "ops").mkdir(parents=True)
    (root / "ops" / "backups.md").write_text(
        "# Backups\n\nIntro.\n\n## Schedule\n\nThe nightly backup starts at 02:00.\n\n"
        "### Retention\n\nKept for 30 days.\n\n## Restore\n\nAsk the on-call engineer.\n"
        "```\n# not a heading inside a fence\n```\n"
    )
    (root / "welcome.txt").write_text("Welcome to the handbook.\n")
    (root / "picture.png").write_bytes(b"\x89PNG")
    configure("docs", folders=[f"handbook={root}"])
    return root


def test_it_lists_the_project_docs_and_added_folders(user, handbook):
    files = {f["path"]: f for f in ok(run_tool("docs_list", user=user))["files"]}
    assert files["docs/USER_TOOLS_GUIDE.md"]["title"] == "Tools: a guide for users and admins"
    assert files["handbook/ops/backups.md"]["title"] == "Backups"
    assert "handbook/welcome.txt" in files
    assert "handbook/picture.png" not in files


def test_it_searches_sections(user, handbook):
    result = ok(run_tool("docs_search", user=user, query="when does the nightly backup start"))
    top = result["results"][0]
    assert top["path"] == "handbook/ops/backups.md#Schedule"
    assert "«nightly» «backup»" in top["snippet"]
    assert ok(run_tool("docs_search", user=user, query="slash commands", top_k=2))["count"] == 2


def test_it_finds_sections_by_meaning_too(user, handbook):
    # Hybrid like memory search: no word of the query is in the section.
    (handbook / "office.md").write_text(
        "# Parking\n\nCars go in the garage under building B.\n\n"
        "# Coffee\n\nThe machine is on the second floor.\n"
    )
    configure("docs", folders=[f"handbook={handbook}"], include_project_docs=False)
    result = ok(run_tool("docs_search", user=user, query="where should I put my automobile"))
    assert result["mode"] == "hybrid" and result["embedder"] == "local:all-MiniLM-L6-v2"
    top = result["results"][0]
    assert top["path"] == "handbook/office.md#Parking" and top["matched_by"] == ["vector"]
    assert top["snippet"] == "Cars go in the garage under building B."
    configure("docs", folders=[f"handbook={handbook}"], include_project_docs=False, embedder="none")
    plain = ok(run_tool("docs_search", user=user, query="where should I put my automobile"))
    assert plain["mode"] == "full-text" and plain["results"] == []
    assert plain["notice"] == "no embedder is configured: full-text search only"


def test_a_first_index_too_large_to_wait_for_is_embedded_in_the_background(
    user, handbook, monkeypatch
):
    # A fresh install's first search (~150 sections of the project's docs, ~20 s to embed on a
    # 2-core machine) answers by full text at once; the vectors come from a background thread.
    from platform_app import docs

    monkeypatch.setattr(docs, "EMBED_WAIT_MAX", 1)
    fresh = uuid4().hex  # sections no earlier test has embedded
    (handbook / "office.md").write_text(
        f"# Parking\n\nCars go in the garage under building B ({fresh}).\n\n"
        f"# Coffee\n\nThe machine is on the second floor ({fresh}).\n"
    )
    configure("docs", folders=[f"handbook={handbook}"], include_project_docs=False)
    query = "where should I put my automobile"
    first = ok(run_tool("docs_search", user=user, query=query))
    assert first["mode"] == "full-text"
    assert "sections is being built: full-text results only for now" in first["notice"]

    def hybrid():
        result = ok(run_tool("docs_search", user=user, query=query))
        return result if result["mode"] == "hybrid" else None

    result = wait_for(hybrid, timeout=120, message="the sections' vectors")
    assert result["results"][0]["path"] == "handbook/office.md#Parking"


def test_the_index_follows_changes(user, handbook):
    assert ok(run_tool("docs_search", user=user, query="zeppelin"))["results"] == []
    (handbook / "new.md").write_text("# Airships\n\nThe zeppelin lands at noon.\n")
    result = ok(run_tool("docs_search", user=user, query="zeppelin"))
    assert result["results"][0]["path"] == "handbook/new.md#Airships"


def test_it_reads_a_file_and_one_section(user, handbook):
    whole = ok(run_tool("docs_read", user=user, path="handbook/ops/backups.md"))
    assert whole["content"].startswith("# Backups")
    assert whole["headings"] == ["# Backups", "## Schedule", "### Retention", "## Restore"]
    section = ok(run_tool("docs_read", user=user, path="handbook/ops/backups.md#schedule"))
    assert section["heading"] == "Schedule"
    assert section["content"].startswith("## Schedule")
    assert "Kept for 30 days." in section["content"]  # its sub-sections come along
    assert "Restore" not in section["content"]
    fenced = ok(run_tool("docs_read", user=user, path="handbook/ops/backups.md#Restore"))
    assert "# not a heading inside a fence" in fenced["content"]


def test_an_unknown_heading_lists_the_real_ones(user, handbook):
    call = run_tool("docs_read", user=user, path="handbook/ops/backups.md#Nope")
    assert call.status == "failed"
    assert "has no heading 'Nope'; its headings: Backups; Schedule; Retention; Restore" in (
        call.error
    )


def test_a_long_file_is_cut_with_a_notice(user, handbook):
    configure("docs", folders=[f"handbook={handbook}"], max_read_bytes=1000)
    (handbook / "long.md").write_text("# Long\n\n" + "line\n" * 1000)
    result = ok(run_tool("docs_read", user=user, path="handbook/long.md"))
    assert result["truncated"] is True and len(result["content"]) == 1000
    assert "only the first 1,000 were read" in result["notice"]


def test_unknown_folders_and_files_are_errors(user, handbook):
    call = run_tool("docs_read", user=user, path="elsewhere/x.md")
    assert call.status == "failed" and "the folders are: docs, handbook" in call.error
    call = run_tool("docs_read", user=user, path="handbook/missing.md")
    assert call.status == "failed" and "'missing.md' does not exist" in call.error


def test_the_project_docs_can_be_switched_off(user, handbook):
    configure("docs", folders=[f"handbook={handbook}"], include_project_docs=False)
    files = [f["path"] for f in ok(run_tool("docs_list", user=user))["files"]]
    assert files and not any(p.startswith("docs/") for p in files)


def test_folder_settings_are_validated():
    from platform_app.executors.docs.settings import DocsSettings

    for bad in (["relative/path"], ["x=/a", "x=/b"], ["bad name=/a"], ["docs=/a"]):
        with pytest.raises(ValueError):
            DocsSettings(folders=bad)
    assert DocsSettings(folders=["/srv/manuals"]).folders == ["manuals=/srv/manuals"]
