"""Agent (system tools of schema-guided agents): reasoning, generate_plan, adapt_plan,
clarification, final_answer and create_report. They structure a turn rather than act on the
world: the plan is kept on the turn, clarification pauses the turn for the person's answer,
final_answer ends it, and create_report writes one Markdown file into the conversation's
``reports/`` folder (nothing else on disk). The turn-level behaviour (what is offered when,
the pause, the end) lives in ``chat_app.agent_kinds``."""
