"""The JSON Schemas in docs/schemas/ are valid, documented, and describe what the commands write.

Real output is validated where the tests produce it (tests/schema_check.py, called by the report,
bisect, minify, doctor and diff fixtures); this file checks the schemas themselves.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from schema_check import KINDS, SCHEMAS, validate

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("kind", KINDS)
def test_schema_is_valid_and_documented(kind):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((SCHEMAS / f"{kind}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    assert f"schemas/{kind}.schema.json" in (ROOT / "docs" / "reference" / "json.md").read_text()


def test_every_schema_file_is_a_kind():
    assert sorted(p.name.split(".")[0] for p in SCHEMAS.glob("*.schema.json")) == sorted(KINDS)


def test_a_report_missing_a_contract_key_is_rejected():
    # the schemas must actually constrain: a report without `graphs` is not a report
    pytest.importorskip("jsonschema")
    report = {
        "graph_breaks": [],
        "recompiles": [],
        "recompile_limit_hits": [],
        "kernels": [],
        "fallbacks": [],
    }
    with pytest.raises(AssertionError, match="graphs"):
        validate("report", report)
