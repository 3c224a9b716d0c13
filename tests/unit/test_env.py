from __future__ import annotations

import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from infra.env import envbool, envchoice, envint, envlist, envstr
from tests.conftest import ROOT


def test_it_reads_typed_values(monkeypatch, tmp_path):
    monkeypatch.setenv("X_BOOL", "yes")
    monkeypatch.setenv("X_INT", "42")
    monkeypatch.setenv("X_LIST", "a, b,,c")
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    monkeypatch.setenv("X_SECRET_FILE", str(secret))
    assert envbool("X_BOOL") is True
    assert envint("X_INT", 1) == 42
    assert envlist("X_LIST") == ["a", "b", "c"]
    assert envstr("X_SECRET") == "s3cret"
    assert envint("X_MISSING", 7) == 7


@pytest.mark.parametrize(
    ("name", "value", "call"),
    [
        ("X_BOOL", "maybe", lambda: envbool("X_BOOL")),
        ("X_INT", "ten", lambda: envint("X_INT", 1)),
        ("X_INT", "0", lambda: envint("X_INT", 1, minimum=1)),
        ("X_CHOICE", "gemini", lambda: envchoice("X_CHOICE", ("openai", "anthropic"), "openai")),
    ],
)
def test_it_fails_loudly_naming_the_variable(monkeypatch, name, value, call):
    monkeypatch.setenv(name, value)
    with pytest.raises(ImproperlyConfigured, match=name):
        call()


def test_a_bad_setting_stops_the_start_with_its_name(tmp_path):
    proc = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "DEBUG": "maybe", "CC_VAR_DIR": str(tmp_path)},
    )
    assert proc.returncode != 0
    assert "DEBUG='maybe' is not a boolean" in proc.stderr
