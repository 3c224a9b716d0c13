"""A request's thread closes its database connection when the request ends (``serve``
connects ``close_request_connections`` to ``request_finished``): the thread ends with the
request, and a persistent connection left there waits for the garbage collector."""

from __future__ import annotations

import threading

import pytest
from django.core.signals import request_finished
from django.db import connection

from infra.request_threads import close_request_connections


@pytest.mark.django_db(transaction=True)
def test_it_closes_the_request_threads_connection() -> None:
    seen: dict[str, object] = {}

    def request() -> None:
        connection.ensure_connection()
        seen["open"] = connection.connection is not None
        request_finished.send(sender=None)
        seen["after"] = connection.connection

    request_finished.connect(close_request_connections, dispatch_uid="test-request-db")
    try:
        thread = threading.Thread(target=request)
        thread.start()
        thread.join(10)
    finally:
        request_finished.disconnect(dispatch_uid="test-request-db")
    assert seen == {"open": True, "after": None}
