"""Property-based requests against the running server's own OpenAPI document
(``/api/openapi.json``), with schemathesis: for every operation, generated parameters and
bodies — valid ones and, in a second pass, invalid ones — sent as an admin whose token holds
every scope. No answer may be a 5xx, and every answer must be one the document describes
(status, content type, headers, body schema); invalid requests must be refused.

One check is left out: that every schema-valid request is accepted. Some rules cannot be
written in the document (a cron expression's meaning, a time zone's name, a tool group's own
settings); the API answers those 422 with the reason, which that check counts as a failure.

schemathesis' pytest plugin cannot load its schema from a fixture under pytest 9, so the
test walks the operations with its Python API and hypothesis itself."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

from tests.api.conftest import token_for

EXAMPLES = 6  # per operation and mode: enough to vary every parameter, few enough for CI


def test_every_answer_matches_the_document_and_none_is_a_server_error(
    api_server: str, staff_user: Any, provider: Any
) -> None:
    # A token that holds every scope and is not held back by its rate limit.
    token = token_for(staff_user, name="schemathesis", rate_limit_per_minute=100_000)
    schema = schemathesis.openapi.from_url(f"{api_server}/api/openapi.json")

    # The token goes through schemathesis' own auth hook, so its checks know that a case
    # generated without credentials (or with bad ones) was sent with the token, and its
    # "ignored auth" check sends cases without it on purpose.
    @schema.auth()
    class Token:
        def get(self, case: Any, context: Any) -> str:
            return token

        def set(self, case: Any, data: str, context: Any) -> None:
            case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}

    failures: dict[str, str] = {}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 30
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            strategy = operation.as_strategy(generation_mode=mode, auth_storage=schema.auth)

            @given(case=strategy)
            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                derandomize=True,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            def check(case: Any) -> None:
                case.call_and_validate(timeout=30, excluded_checks=[positive_data_acceptance])

            try:
                check()
            except (Exception, BaseExceptionGroup) as exc:  # all operations run; all reported
                failures[f"{operation.label} ({mode.value})"] = str(exc)[:2000]
    if failures:
        pytest.fail("\n\n".join(f"{k}:\n{v}" for k, v in failures.items()), pytrace=False)
