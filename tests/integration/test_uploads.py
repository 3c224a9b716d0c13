"""An upload is in the conversation's workspace for the agent's tools at once (the worker
process's too, in distributed mode), and travels with the message it was sent with: as an
image part to a model with image input, as a name to every model."""

from __future__ import annotations

import base64
import uuid

import pytest

from chat_app.models import Message, Turn
from chat_app.services.turns import turn_send
from tests.conftest import wait_turn
from tests.integration.test_images import PNG
from tests.llm_server import Call, Reply
from tools_app.models import ToolCall


def upload(client, conversation, name, body, content_type="text/plain"):
    response = client.post(
        f"/c/{conversation.pk}/files/upload/?name={name}", data=body, content_type=content_type
    )
    assert response.status_code == 201, response.content
    return response.json()["file"]


@pytest.mark.modes
def test_the_agents_file_tool_reads_what_was_uploaded(
    worker, client, user, conversation, llm, provider
):
    client.force_login(user)
    secret = f"uploaded-{uuid.uuid4().hex}"
    stored = upload(client, conversation, "notes.txt", secret.encode())
    llm.script(Reply(calls=[Call("file_read", {"path": stored["name"]})]), Reply(text="Read it."))
    turn = turn_send(
        user=user,
        conversation_id=conversation.pk,
        text="What is in my file?",
        files=[stored["name"]],
    )
    turn = wait_turn(turn.pk)
    assert turn.status == Turn.Status.SUCCEEDED, turn.error
    call = ToolCall.objects.get(turn=turn, tool="file_read")
    assert call.status == ToolCall.Status.SUCCEEDED, call.result
    assert call.result["content"] == secret
    asked = llm.requests[0]["messages"][-1]
    assert asked["role"] == "user"
    assert f"uploaded into the workspace with this message: {stored['name']}" in asked["content"]
    message = Message.objects.get(turn=turn, role=Message.Role.USER)
    assert message.attachments == [{"name": stored["name"], "size": len(secret), "mime": ""}]


def test_an_image_model_gets_the_uploaded_image_others_its_name(
    worker, client, user, conversation, llm, provider
):
    client.force_login(user)
    shot = upload(client, conversation, "shot.png", PNG, "image/png")
    assert shot["mime"] == "image/png"
    b64 = base64.b64encode(PNG).decode()
    # Names the browser did not upload (or that would leave the workspace) are dropped.
    files = [shot["name"], "../../etc/passwd", "missing.png", 7]

    llm.script(Reply(text="A red pixel."))
    turn = wait_turn(
        turn_send(user=user, conversation_id=conversation.pk, text="what?", files=files).pk
    )
    assert turn.status == Turn.Status.SUCCEEDED, turn.error
    text_only = str(llm.requests[0])
    assert b64 not in text_only and shot["name"] in text_only

    provider.image_input = True
    provider.save()
    llm.script(Reply(text="Still red."))
    second = upload(client, conversation, "notes.md", b"# notes")
    turn = wait_turn(
        turn_send(
            user=user, conversation_id=conversation.pk, text="and now?", files=[second["name"]]
        ).pk
    )
    assert turn.status == Turn.Status.SUCCEEDED, turn.error
    messages = llm.requests[1]["messages"]
    first_user = next(m for m in messages if m["role"] == "user")
    urls = [p["image_url"]["url"] for p in first_user["content"] if p["type"] == "image_url"]
    assert urls == [f"data:image/png;base64,{b64}"]
    assert "notes.md" in str(messages[-1]["content"])
    stored = Message.objects.filter(role=Message.Role.USER).order_by("id").first()
    assert [a["name"] for a in stored.attachments] == [shot["name"]]


def test_only_the_newest_uploaded_images_go_to_the_model():
    from chat_app.services.history import _newest_uploaded_images
    from chat_app.services.uploads import MAX_IMAGES_TO_MODEL

    def msg(pk, role, names):
        return Message(
            pk=pk, role=role, attachments=[{"name": n, "mime": "image/png"} for n in names]
        )

    messages = [
        msg(1, "user", ["a.png", "b.png", "c.png"]),
        msg(2, "assistant", ["not-a-person.png"]),
        msg(3, "user", ["d.png", "e.png"]),
        msg(4, "user", []),
    ]
    messages[3].attachments = [{"name": "doc.pdf", "mime": ""}]
    chosen = _newest_uploaded_images(messages)
    assert MAX_IMAGES_TO_MODEL == 4
    assert chosen == {(3, "d.png"), (3, "e.png"), (1, "c.png"), (1, "b.png")}
