"""The Define a tool page: staff only (one 403 for everyone else), the same service as
``manage.py tools define``."""

from __future__ import annotations

import json

import pytest

from tools_app.models import ToolSource

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/tools/sources/schema/new/"
GOOD = {
    "tools": [
        {
            "name": "guess_mood",
            "description": "Guess a text's mood.",
            "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}},
        }
    ]
}


@pytest.fixture(autouse=True)
def _forget_defined():
    from tools_app.imported import imported_reset

    imported_reset()
    yield
    imported_reset()


def test_it_is_for_staff_only(client, user):
    client.force_login(user)
    assert client.get(URL).status_code == 403
    assert client.post(URL, {"definition": json.dumps(GOOD)}).status_code == 403
    assert not ToolSource.objects.exists()


def test_staff_define_a_tool_and_see_errors_inline(staff_client):
    page = staff_client.get(URL)
    assert page.status_code == 200 and 'name="definition"' in page.content.decode()
    wrong = staff_client.post(URL, {"definition": '{"tools": [{"name": "x"}]}'})
    assert wrong.status_code == 200 and "a description is needed" in wrong.content.decode()
    done = staff_client.post(URL, {"definition": json.dumps(GOOD)})
    assert done.status_code == 302 and done["Location"].endswith("#group-schema_guess_mood")
    assert ToolSource.objects.get(name="guess-mood").kind == "schema"
