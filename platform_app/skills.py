"""Skills: SKILL.md files (YAML frontmatter ``name`` and ``description``, then instructions),
found in three places, each winning over the one before on a name clash:

- the skills shipped with Control Center (``platform_app/shipped_skills``: testing, git
  operations, memory), unless an admin switches them off;
- the data directory (``SKILLS_DIR``, default ``var/skills``): ``<dir>/<folder>/SKILL.md``,
  put there by an admin;
- the conversation's workspace: ``<workspace>/skills/<folder>/SKILL.md``. These are untrusted
  files (the model and the user write the workspace): read below the workspace without
  following links (``safe_files``), size-capped, frontmatter parsed with ``yaml.safe_load``,
  names and descriptions checked, and only a one-line description reaches the prompt.

A project can so refine a shared skill, and an admin a shipped one. Progressive
disclosure: the system prompt lists names and descriptions (``skills_prompt``), and
``skill_load`` returns the full text when the model needs it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from platform_app import safe_files

SKILL_FILE = "SKILL.md"
SHIPPED_DIR = Path(__file__).resolve().parent / "shipped_skills"
NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
MAX_DESCRIPTION = 1024
MAX_FRONTMATTER = 8192
PROMPT_DESCRIPTION = 300


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    source: str  # "workspace" | "data" | "shipped"
    path: str  # as shown: skills/<folder>/SKILL.md or <folder>/SKILL.md
    body: str


@dataclass
class Catalogue:
    skills: dict[str, Skill] = field(default_factory=dict)
    # Skills a later place hides (a data skill hidden by a workspace one, a shipped one by either).
    overridden: dict[str, Skill] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


class SkillError(Exception):
    """Unknown skill: a failed call."""


def parse_skill(text: str, *, where: str) -> tuple[str, str, str]:
    """(name, description, body) of a SKILL.md, or ValueError saying what is wrong."""
    if not text.startswith("---"):
        raise ValueError(f"{where}: no YAML frontmatter (the file must start with ---)")
    end = text.find("\n---", 3)
    if end < 0:
        raise ValueError(f"{where}: the frontmatter is not closed with ---")
    if end > MAX_FRONTMATTER:
        raise ValueError(f"{where}: the frontmatter is longer than {MAX_FRONTMATTER} characters")
    try:
        meta = yaml.safe_load(text[3:end])
    except yaml.YAMLError as exc:
        raise ValueError(f"{where}: invalid YAML frontmatter ({exc.__class__.__name__})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{where}: the frontmatter must be a mapping with name and description")
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not NAME.match(name):
        raise ValueError(
            f"{where}: name must be 1-64 lower-case letters, digits, - or _ (got {name!r:.80})"
        )
    if not isinstance(description, str) or not description.strip():
        raise ValueError(f"{where}: description is missing")
    description = " ".join(description.split())
    if len(description) > MAX_DESCRIPTION:
        raise ValueError(f"{where}: description is longer than {MAX_DESCRIPTION} characters")
    body = text[end + 4 :].lstrip("-").lstrip("\n")
    return name, description, body


# (root, path, size, mtime) → (name, description, body), or what is wrong with the file.
_parsed: dict[tuple[object, ...], tuple[str, str, str] | str] = {}
_PARSED_MAX = 1024


def _scan(
    root: Path,
    *,
    source: str,
    start: tuple[str, ...],
    max_bytes: int,
    max_skills: int,
    into: Catalogue,
) -> dict[str, Skill]:
    """Skills at ``root/start.../<folder>/SKILL.md``; nothing on the way may be a link."""
    found: dict[str, Skill] = {}
    depth = len(start)
    try:
        entries = list(
            safe_files.walk_beneath(
                root,
                suffixes=(SKILL_FILE.lower(),),
                max_entries=max_skills * 4,
                max_depth=1,
                start=start,
            )
        )
    except safe_files.Refused as exc:
        into.problems.append(f"{source}: {exc}; its skills are ignored")
        return found
    for entry in entries:
        if len(entry.parts) != depth + 2 or entry.parts[-1] != SKILL_FILE:
            continue
        shown = "/".join(entry.parts)
        if len(found) >= max_skills:
            into.problems.append(f"{source}: more than {max_skills} skills; the rest are ignored")
            break
        # Parsed once per version of the file (the catalogue is read on every model round).
        key = (str(root), entry.parts, entry.size, entry.mtime_ns, max_bytes)
        parsed = _parsed.get(key)
        if parsed is None:
            try:
                data = safe_files.read_beneath(
                    root, list(entry.parts), max_bytes=max_bytes, truncate=False
                )
                parsed = parse_skill(data.data.decode("utf-8", errors="replace"), where=shown)
            except (safe_files.Refused, safe_files.Missing) as exc:
                into.problems.append(f"{shown}: {exc}")
                continue
            except ValueError as exc:
                parsed = str(exc)
            if len(_parsed) >= _PARSED_MAX:
                _parsed.clear()
            _parsed[key] = parsed
        if isinstance(parsed, str):
            into.problems.append(parsed)
            continue
        name, description, body = parsed
        if name in found:
            into.problems.append(f"{shown}: the name {name!r} is used twice in {source}")
            continue
        found[name] = Skill(name, description, source, shown, body)
    return found


# The shipped skills come with the code: scanned once per process (the catalogue is read on
# every model round, and the walk was a millisecond of each).
_shipped_scans: dict[tuple[str, int, int], tuple[dict[str, Skill], list[str]]] = {}


def _shipped(
    root: Path | None, *, max_bytes: int, max_skills: int, into: Catalogue
) -> dict[str, Skill]:
    if root is None:
        return {}
    key = (str(root), max_bytes, max_skills)
    scanned = _shipped_scans.get(key)
    if scanned is None:
        problems = Catalogue()
        found = _scan(
            root,
            source="shipped",
            start=(),
            max_bytes=max_bytes,
            max_skills=max_skills,
            into=problems,
        )
        scanned = _shipped_scans[key] = (found, problems.problems)
    into.problems.extend(scanned[1])
    return dict(scanned[0])


def skill_catalogue(
    *,
    data_dir: Path | None,
    workspace_dir: Path | None,
    max_bytes: int,
    max_skills: int,
    shipped_dir: Path | None = None,
) -> Catalogue:
    catalogue = Catalogue()

    def scan(root: Path | None, source: str, start: tuple[str, ...]) -> dict[str, Skill]:
        if root is None:
            return {}
        return _scan(
            root,
            source=source,
            start=start,
            max_bytes=max_bytes,
            max_skills=max_skills,
            into=catalogue,
        )

    shipped = _shipped(shipped_dir, max_bytes=max_bytes, max_skills=max_skills, into=catalogue)
    data = scan(data_dir, "data", ())
    workspace = scan(workspace_dir, "workspace", ("skills",))
    catalogue.skills = dict(sorted({**shipped, **data, **workspace}.items()))
    catalogue.overridden = {
        name: skill
        for layer in (shipped, data)
        for name, skill in layer.items()
        if catalogue.skills[name] is not skill
    }
    return catalogue


def skill_get(catalogue: Catalogue, name: str) -> Skill:
    skill = catalogue.skills.get(name.strip())
    if skill is None:
        known = ", ".join(catalogue.skills) or "none"
        raise SkillError(f"unknown skill {name!r}; the skills are: {known}")
    return skill


def skill_summary(skill: Skill, catalogue: Catalogue) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": skill.name,
        "description": skill.description,
        "source": skill.source,
        "path": skill.path,
    }
    hidden = catalogue.overridden.get(skill.name)
    if hidden is not None:
        out["overrides"] = hidden.source
    return out


def skills_prompt_block(catalogue: Catalogue) -> str:
    if not catalogue.skills:
        return ""
    lines = [
        "## Skills",
        "Instructions for particular tasks. When one fits the request, load it with "
        "skill_load(name) before you start.",
    ]
    for skill in catalogue.skills.values():
        text = skill.description
        if len(text) > PROMPT_DESCRIPTION:
            text = text[: PROMPT_DESCRIPTION - 1] + "…"
        mark = " (workspace)" if skill.source == "workspace" else ""
        lines.append(f"- {skill.name}{mark}: {text}")
    return "\n".join(lines)
