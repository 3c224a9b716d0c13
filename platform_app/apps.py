from __future__ import annotations

from collections.abc import Collection

from django.apps import AppConfig


class PlatformConfig(AppConfig):
    name = "platform_app"
    label = "platform"  # the label the tables and migrations were made under
    verbose_name = "Platform tools (memory, schedules, subagents)"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from chat_app.pages import page_panels_register
        from chat_app.services.prompt_blocks import prompt_blocks_register
        from chat_app.signals import turn_finished, turn_stopping
        from infra.maintenance import maintenance_step
        from platform_app import checks
        from platform_app.executors import EXECUTORS
        from platform_app.subagents import subagent_parent_stopping, subagent_turn_finished
        from platform_app.views import chat_page_panels
        from tools_app.executors import load_executors

        load_executors("platform_app.executors", EXECUTORS)
        checks.register_all()
        turn_finished.connect(subagent_turn_finished, dispatch_uid="platform.subagent_finished")
        turn_stopping.connect(subagent_parent_stopping, dispatch_uid="platform.subagent_stopping")
        page_panels_register("platform", chat_page_panels)
        from platform_app.webhooks.receivers import connect as webhooks_connect

        webhooks_connect()
        # Emails from below (approvals) are written in each person's own language.
        from platform_app.preferences.services import preferences_get
        from tools_app.i18n import person_language_set

        person_language_set(lambda user: preferences_get(user=user)[1])
        prompt_blocks_register("platform", _prompt_blocks)
        # Quotas: checked before every model round and at every binding, whatever the way in.
        from chat_app.services.usage import round_gate_set
        from platform_app.models import Quota
        from platform_app.usage.quotas import call_gate, round_gate
        from tools_app.models import config_track
        from tools_app.services.binding import call_gate_set

        round_gate_set(round_gate)
        call_gate_set(call_gate)
        config_track(Quota)  # which quotas apply to whom is kept under the token

        # Pre-approved schedules: binding asks which schedule a call runs for (its turn's).
        from django.db.models.signals import post_delete

        from platform_app.models import Schedule
        from platform_app.preapprovals import schedule_deleted, schedule_of_call
        from tools_app.services.standing import schedule_of_call_set

        schedule_of_call_set(schedule_of_call)
        post_delete.connect(schedule_deleted, sender=Schedule, dispatch_uid="platform.preapprovals")

        # Memory without vectors of the configured embedder (hybrid search by default since
        # issue 26) is embedded in the background, by the workers.
        maintenance_step("memory backfill", _memory_backfill_kick, order=50)

        # /metrics of the web process: how far behind each audit exporter is.
        from infra.metrics import metrics_reader
        from platform_app.audit_export import metrics as audit_export_metrics

        metrics_reader("audit exporters", audit_export_metrics.read, scope="deployment")


def _memory_backfill_kick() -> None:
    from platform_app.memory.backfill import backfill_kick

    backfill_kick()


def _prompt_blocks(
    user_id: int | None, conversation_id: int | None, offered: Collection[str]
) -> str:
    from platform_app.prompt import platform_prompt

    return platform_prompt(user_id=user_id, conversation_id=conversation_id, offered=offered)
