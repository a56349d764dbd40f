"""Property-based fuzzing of every operation in the OpenAPI document (issue #15, hostile input).

Schemathesis reads the service's OpenAPI document and generates requests for each operation,
ones that fit the schema and ones that break it, sent to a real ``sandlot serve`` with four
credentials: the fuzz tenant's key, an operator's key, a well-formed key that does not exist, and
none. Every answer must be no 5xx, a documented status code, the documented content type and a
body of the documented schema (schemathesis' ``not_a_server_error``, ``status_code_conformance``,
``content_type_conformance`` and ``response_schema_conformance``).

The operations are collected from the app the factory builds (pytest needs them before any server
runs); :func:`test_the_server_publishes_the_fuzzed_document` checks the running server serves the
same document at ``/openapi/openapi.json``. Each (operation, credential) pair is one test.

Bounds: a fixed number of examples per operation (``SANDLOT_FUZZ_EXAMPLES``, default
:data:`EXAMPLES`; without a valid key a quarter of it, since those all end in 401), derandomized
so CI sends the same requests every run; ``SANDLOT_FUZZ_SEED`` switches to random generation from
that seed, and ``SANDLOT_FUZZ_EXAMPLES=500`` (say) fuzzes longer locally. No shrinking: the
first failing request is reported as a curl command. Operations that may start containers
(creating sandboxes and sessions, creating or changing an environment, whose pool fills) run at
most :data:`EXPENSIVE_EXAMPLES` examples, and the fuzz tenant's quota caps how many containers
exist at once; ``tests/fuzz/conftest.py`` removes every one at the end. No operation is excluded.
WebSocket endpoints (terminals, process output streams) are not in the OpenAPI document; the
WebSocket tests cover them.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import httpx
import hypothesis
import pytest
import schemathesis
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from sandlot.app import create_app
from sandlot.settings import Settings
from tests.fuzz.conftest import FuzzKeys

#: Examples per operation with a valid key (``SANDLOT_FUZZ_EXAMPLES`` overrides).
EXAMPLES = 25
#: At most this many for the operations that may start containers.
EXPENSIVE_EXAMPLES = 5
#: The operations that may start containers.
EXPENSIVE = frozenset(
    {
        "POST /v1/sandboxes/",
        "POST /v1/sessions/",
        "POST /v1/environments/",
        "PATCH /v1/environments/{environment}",
        "POST /v1/sessions/{session_id}/resume",
    }
)

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


def _document() -> dict[str, Any]:
    """The OpenAPI document of an app built by the factory (no server, no database opened)."""
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app(Settings(data_dir=Path(tmp), database_url=f"sqlite:///{tmp}/x.db"))
        return dict(app.openapi_schema.to_schema())


DOCUMENT = _document()
SCHEMA = schemathesis.openapi.from_dict(DOCUMENT)
OPERATIONS = {op.label: op for op in (r.ok() for r in SCHEMA.get_all_operations())}


def _examples(label: str, who: str) -> int:
    examples = int(os.environ.get("SANDLOT_FUZZ_EXAMPLES", EXAMPLES))
    if who in ("wrong", "none"):
        examples = max(1, examples // 4)
    if label in EXPENSIVE:
        examples = min(examples, EXPENSIVE_EXAMPLES)
    return examples


def _cases(label: str, known: dict[str, str]) -> st.SearchStrategy[Any]:
    """Valid and invalid requests, and valid ones aimed at the seeded resources (their ids in
    the path) so that they reach the handlers' work rather than a 404."""
    operation = OPERATIONS[label]
    strategies = [
        operation.as_strategy(generation_mode=GenerationMode.POSITIVE),
        operation.as_strategy(generation_mode=GenerationMode.NEGATIVE),
    ]
    names = [p.name for p in operation.path_parameters]
    if names and all(name in known for name in names):
        aimed = operation.as_strategy(path_parameters={name: known[name] for name in names})
        strategies += [aimed, aimed]
    return st.one_of(strategies)


def fuzz(label: str, url: str, headers: dict[str, str], examples: int, known: dict[str, str]) -> None:
    """Send ``examples`` generated requests for one operation; the first failing check raises."""
    seed = os.environ.get("SANDLOT_FUZZ_SEED")

    @hypothesis.settings(
        max_examples=examples,
        derandomize=seed is None,
        database=None,
        deadline=None,
        phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
        suppress_health_check=list(hypothesis.HealthCheck),
    )
    @hypothesis.given(case=_cases(label, known))
    def run(case: Any) -> None:
        response = case.call(base_url=url, headers=headers, timeout=60)
        case.validate_response(response, checks=CHECKS)  # reports the request as a curl command

    if seed is not None:
        run = hypothesis.seed(int(seed))(run)
    run()


def test_the_server_publishes_the_fuzzed_document(live_server: str) -> None:
    served = httpx.get(f"{live_server}/openapi/openapi.json", timeout=30)
    assert served.status_code == 200
    assert served.json() == DOCUMENT


#: Deletions last, so that the seeded resources serve the other operations first.
LABELS = sorted(OPERATIONS, key=lambda label: (label.startswith("DELETE "), label))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("who", ["tenant", "operator", "wrong", "none"])
@pytest.mark.parametrize("label", LABELS)
def test_operation_answers_as_documented(
    label: str, who: str, fuzz_keys: FuzzKeys, seeded: dict[str, str], live_server: str
) -> None:
    known = {**seeded, "tenant": fuzz_keys.tenant_id}
    fuzz(label, live_server, fuzz_keys.headers[who], _examples(label, who), known)
