from __future__ import annotations

from celery import shared_task


@shared_task(name="chat_app.tasks.agent_round", ignore_result=True)
def agent_round(turn_id: int) -> None:
    """Rounds are the agent runner's (``manage.py agent_runner``); a Celery worker told to
    consume the ``agent`` queue still runs them, one stream per worker slot."""
    from chat_app.runner import run_round_once

    run_round_once(turn_id)
