"""The translations are complete: every string people read is marked, every marked string has
a Russian translation that is neither empty nor fuzzy, the compiled catalogs match their
sources, and the tools' words are in the catalog. docs/TRANSLATING.md says how to fix a
failure here (`make messages`, then translate)."""

from __future__ import annotations

import gettext
import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from django.conf import settings
from django.core.management import call_command

from tests.helpers import require
from tests.i18n.template_text import unmarked_in

ROOT = Path(__file__).resolve().parents[2]
LOCALE = ROOT / "locale"
TRANSLATED = [code for code, _name in settings.LANGUAGES if code != settings.LANGUAGE_CODE]
DOMAINS = ("django", "djangojs")
PLACEHOLDER = re.compile(r"%\(\w+\)[sdrf]|\{\}|%s|%d")


def _po(language: str, domain: str) -> Path:
    return LOCALE / language / "LC_MESSAGES" / f"{domain}.po"


def _problems(path: Path) -> list[str]:
    """Entries of a .po file without a usable translation: empty, fuzzy, or whose
    placeholders differ from the English (a translation must keep every %(name)s)."""
    catalog = read_po(path.open("rb"))
    problems = []
    for message in catalog:
        if not message.id:
            continue
        ids = message.id if isinstance(message.id, tuple) else (message.id,)
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        if message.fuzzy:
            problems.append(f"fuzzy: {ids[0]!r}")
        elif not all(strings):
            problems.append(f"untranslated: {ids[0]!r}")
        else:
            wanted = sorted(set(PLACEHOLDER.findall(ids[-1])))
            for string in strings:
                if sorted(set(PLACEHOLDER.findall(string))) != wanted:
                    problems.append(f"placeholders differ: {ids[0]!r} → {string!r}")
    return problems


@pytest.mark.parametrize("language", TRANSLATED)
@pytest.mark.parametrize("domain", DOMAINS)
def test_every_marked_string_has_a_translation(language, domain):
    assert _po(language, domain).exists(), f"no {domain}.po for {language}: run `make messages`"
    assert _problems(_po(language, domain)) == []


@pytest.mark.parametrize("language", TRANSLATED)
@pytest.mark.parametrize("domain", DOMAINS)
def test_the_committed_compiled_catalog_matches_its_source(language, domain):
    """The .mo files are committed (so `make run` needs no gettext tools): they must say
    what the .po says."""
    source = read_po(_po(language, domain).open("rb"))
    compiled = io.BytesIO()
    write_mo(compiled, source)
    compiled.seek(0)
    expected = gettext.GNUTranslations(compiled)._catalog  # type: ignore[attr-defined]
    mo = _po(language, domain).with_suffix(".mo")
    assert mo.exists(), f"{mo} is missing: run `make messages`"
    with mo.open("rb") as handle:
        committed = gettext.GNUTranslations(handle)._catalog  # type: ignore[attr-defined]
    # The header ('') is written differently by each compiler; the messages must be equal.
    keys = (expected.keys() | committed.keys()) - {""}
    stale = {k for k in keys if expected.get(k) != committed.get(k)}
    assert not stale, f"{mo} is out of date ({len(stale)} entries): run `make messages`"


def test_the_tool_catalog_lists_the_tools_words_as_they_are_now():
    call_command("tool_catalog", check=True)


def test_templates_mark_the_text_people_read():
    assert unmarked_in(ROOT / "templates") == {}


def test_makemessages_finds_no_string_without_a_translation(tmp_path):
    """makemessages, run on a copy of the sources, finds nothing the catalogs lack: a new or
    changed string fails here until it is translated."""
    require(shutil.which("xgettext") is not None, "GNU gettext (xgettext, msgmerge) is needed")
    copy = tmp_path / "src"
    copy.mkdir()
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "vendor", "migrations")
    for name in ("controlcenter", "infra", "tools_app", "chat_app", "platform_app", "templates"):
        shutil.copytree(ROOT / name, copy / name, ignore=skip)
    shutil.copytree(ROOT / "static" / "js", copy / "static" / "js")
    shutil.copytree(LOCALE, copy / "locale")
    shutil.copy(ROOT / "manage.py", copy / "manage.py")
    env = {"PATH": "/usr/bin:/bin", "CC_VAR_DIR": str(tmp_path / "var"), "HOME": str(tmp_path)}
    for domain in DOMAINS:
        subprocess.run(
            [sys.executable, "manage.py", "makemessages", "--all", "--no-location", "-d", domain],
            cwd=copy,
            env=env,
            check=True,
            capture_output=True,
        )
    problems = {
        f"{language}/{domain}": _problems(
            copy / "locale" / language / "LC_MESSAGES" / f"{domain}.po"
        )
        for language in TRANSLATED
        for domain in DOMAINS
    }
    assert problems == {f"{language}/{domain}": [] for language in TRANSLATED for domain in DOMAINS}
