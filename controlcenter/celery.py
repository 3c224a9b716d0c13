from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlcenter.settings")

app = Celery("controlcenter")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_finalize.connect
def _connect_worker_signals(sender: Celery, **kwargs: object) -> None:
    from celery.signals import worker_ready

    def start_maintenance(**_: object) -> None:
        from controlcenter.maintenance import start_maintenance_thread

        start_maintenance_thread()

    worker_ready.connect(start_maintenance, weak=False, dispatch_uid="cc-maintenance")
