from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from django.conf import settings as django_settings
from django.utils.translation import gettext as _
from pydantic import Field, field_validator

from tools_app.registry import GroupSettings, ToolGroup, register_group

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def parse_folder(entry: str) -> tuple[str, str]:
    """``name=/absolute/path`` or ``/absolute/path`` (named after its last component)."""
    name, sep, path = entry.partition("=")
    if not sep:
        name, path = Path(entry).name, entry
    name, path = name.strip(), path.strip()
    if not path.startswith("/"):
        raise ValueError(f"{entry!r}: the folder must be an absolute path")
    if not _NAME.match(name):
        raise ValueError(f"{entry!r}: the name {name!r} may use letters, digits, _ . -")
    return name, path


class DocsSettings(GroupSettings):
    timeout_seconds: int = Field(30, ge=1, le=300, description="Longest a call may run (s).")
    include_project_docs: bool = Field(
        True, description="Offer this project's own docs/ folder (as 'docs')."
    )
    folders: list[str] = Field(
        default_factory=list,
        description="More folders on the worker host, one per line: name=/absolute/path "
        "(or just the path; it is named after its last part). Links inside are not followed.",
    )
    max_files: int = Field(500, ge=1, le=10_000, description="Most files listed and indexed.")
    max_read_bytes: int = Field(
        200_000, ge=1_000, le=5_000_000, description="Most bytes docs_read returns of a file."
    )
    max_top_k: int = Field(20, ge=1, le=100, description="Most results one search returns.")
    embedder: Literal["local", "none"] = Field(
        "local",
        description="docs_search is hybrid: full-text plus the meaning of each section, with "
        "the local all-MiniLM-L6-v2 (offline); none: full-text only.",
    )
    min_similarity: float = Field(
        0.3,
        ge=-1.0,
        le=1.0,
        description="Sections less similar to the query than this (cosine) are not found by "
        "meaning.",
    )

    @field_validator("folders")
    @classmethod
    def _folders(cls, value: list[str]) -> list[str]:
        out, names = [], {"docs"}
        for raw in value:
            entry = raw.strip()
            if not entry:
                continue
            name, path = parse_folder(entry)
            if name in names:
                raise ValueError(f"{entry!r}: the name {name!r} is used twice")
            names.add(name)
            out.append(f"{name}={path}")
        return out


def docs_roots(settings: Any) -> list[Any]:
    from platform_app.docs import Root

    roots = []
    if settings.include_project_docs:
        roots.append(Root("docs", Path(django_settings.PROJECT_DOCS_DIR)))
    for entry in settings.folders:
        name, path = parse_folder(entry)
        roots.append(Root(name, Path(path)))
    return roots


def docs_status(settings: Any) -> tuple[str, str, str]:
    roots = docs_roots(settings)
    missing = [r.name for r in roots if not r.path.is_dir()]
    label = f"{len(roots)} folder{'s' if len(roots) != 1 else ''}"
    if missing:
        return "bad", label, f"missing: {', '.join(missing)}"
    return "ok", label, ", ".join(f"{r.name} → {r.path}" for r in roots) or "no folders"


GROUP = register_group(
    ToolGroup(
        name="docs",
        untrusted_source="documents",
        label=_("Docs"),
        description="Read and search documentation: this project's docs/ and folders an "
        "admin adds.",
        settings_model=DocsSettings,
        limits=("folders", "embedder", "max_read_bytes"),
        order=65,
        status=docs_status,
    )
)
