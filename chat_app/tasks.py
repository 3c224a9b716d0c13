from __future__ import annotations

from celery import shared_task


@shared_task(name="chat_app.tasks.agent_round", ignore_result=True)
def agent_round(turn_id: int) -> None:
    from chat_app.services.loop import agent_round as run

    run(turn_id)
