"""What a started process holds: no SDK or library it does not use yet (memory, issue 38).

Anthropic's SDK (~40 MiB in a process), numpy (~15 MiB) and Authlib (~17 MiB with what it
pulls in) are imported when an Anthropic provider, a memory search or an SSO sign-in first
needs them, not by the server's start: a runner warms up only the provider kinds configured,
the maintenance pass asks the local embedder for its id (a name), and the login page's views
do not load the OpenID Connect client's libraries.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT, child_env

LAZY = ("anthropic", "numpy", "authlib", "joserfc")

STARTED = """
import sys
import django
django.setup()
import controlcenter.asgi, controlcenter.urls, platform_app.sso.views
from chat_app.runner import AgentRunner
from platform_app.memory.embedders import LocalEmbedder
AgentRunner()._warm_up()
assert LocalEmbedder().id == "local:all-MiniLM-L6-v2"
print(sorted(name for name in {lazy!r} if name in sys.modules))
"""


@pytest.mark.django_db(transaction=True)
def test_a_started_process_imports_no_sdk_it_does_not_use(provider) -> None:
    """An OpenAI-compatible provider configured (the scripted one): its SDK only."""
    done = subprocess.run(
        [sys.executable, "-c", STARTED.format(lazy=LAZY)],
        cwd=ROOT,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
