"""A schema-driven sweep of the `serve` API (schemathesis against /api/openapi.json, slow):
every operation with requests the document calls valid and requests it calls invalid, on a
real app and store. No answer may be a 500, a status or a body the document does not list,
or a 2xx to a request the document calls invalid. Refusals of valid-looking requests for
reasons a schema cannot say (no such preset or snapshot, a query with no searchable word, a
file type no loader reads) are 400s the document lists, so positive_data_acceptance is off.

Deterministic (derandomized Hypothesis); API_SWEEP_EXAMPLES runs more per operation."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from enginelib.web import Service, create_app
from tests.helpers import open_test_store, serve_in_thread
from tests.test_web import build_store

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("API_SWEEP_EXAMPLES", "8"))
TOKEN = "sweep-token-0123456789abcdef"


@pytest.fixture(scope="module", params=[None, TOKEN], ids=["no-token", "token"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[Any, Any, dict[str, str], str]]:
    import requests

    root = tmp_path_factory.mktemp("sweep")
    build_store(root / "store", root / "src")
    service = Service(open_test_store(root / "store"), poll_s=0.05, time_unit=0.001,
                      max_upload_bytes=4096)
    server, thread, base = serve_in_thread(create_app(service, token=request.param))
    headers = {"authorization": f"Bearer {request.param}"} if request.param else {}
    try:
        with requests.Session() as session:
            document = session.get(f"{base}/api/openapi.json", headers=headers, timeout=30)
            yield schemathesis.openapi.from_dict(document.json()), session, headers, base
    finally:
        server.should_exit = True  # type: ignore[attr-defined]
        thread.join(timeout=60)  # type: ignore[attr-defined]


OPERATIONS = [("GET", "/api/search"), ("POST", "/api/search"), ("POST", "/api/check-answer"),
              ("GET", "/api/documents"), ("GET", "/api/documents/{document_id}"),
              ("DELETE", "/api/documents/{document_id}"), ("POST", "/api/upload"),
              ("GET", "/api/jobs"), ("GET", "/api/jobs/history"), ("POST", "/api/jobs/retry-dlq"),
              ("POST", "/api/jobs/purge-done"), ("POST", "/api/jobs/drop-dlq"),
              ("DELETE", "/api/jobs/{job_id}"), ("GET", "/api/sources"), ("GET", "/api/stats"),
              ("GET", "/api/presets"), ("GET", "/api/health"), ("GET", "/api/openapi.json")]


@pytest.mark.parametrize("mode", ["positive", "negative"])
@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_every_operation_answers_as_documented(served: tuple[Any, Any, Any, str], method: str,
                                               path: str, mode: str) -> None:
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        negative_data_rejection,
        response_schema_conformance,
        status_code_conformance,
    )

    schema, session, headers, base = served
    operation = schema[path][method]
    described = schema.raw_schema["paths"][path][method.lower()]
    if mode == "negative" and not ({"parameters", "requestBody"} & set(described) or headers):
        # No parameter, body or token to get wrong: the one invalid request left is a
        # parameter the operation does not take, which must be refused, not dropped.
        response = session.request(method, f"{base}{path}", params={"unexpected": "1"},
                                   headers=headers, timeout=30)
        assert response.status_code == 400, (method, path, response.status_code)
        assert response.json()["type"] == "InvalidInputError"
        assert "unexpected" in response.json()["error"]
        return
    checks = [not_a_server_error, status_code_conformance, content_type_conformance,
              response_schema_conformance]
    if mode == "negative":
        checks.append(negative_data_rejection)
    strategy = operation.as_strategy(generation_mode=schemathesis.GenerationMode(mode))

    @settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(case=strategy)
    def run(case: Any) -> None:
        case.call_and_validate(base_url=base, session=session, headers=headers, checks=checks,
                               timeout=30)

    run()
