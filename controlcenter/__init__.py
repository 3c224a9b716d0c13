# First, before anything loads prometheus_client: where this process keeps its metrics.
from infra.metrics_dir import metrics_dir_prepare

metrics_dir_prepare()

from controlcenter.celery import app as celery_app  # noqa: E402

__all__ = ["celery_app"]
