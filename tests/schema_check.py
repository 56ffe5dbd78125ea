"""Validate real `--json` output against docs/schemas/<kind>.schema.json (the documented formats).

The fixtures that run report, bisect, minify, doctor and diff for their own tests call `validate`
on what they got, so every scenario those tests cover checks its JSON against the published schema.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

SCHEMAS = Path(__file__).resolve().parents[1] / "docs" / "schemas"
KINDS = ("report", "bisect", "minify", "minify_kernel", "doctor", "diff", "fix")


@functools.cache
def _validator(kind: str):
    import jsonschema

    schema = json.loads((SCHEMAS / f"{kind}.schema.json").read_text())
    return jsonschema.Draft202012Validator(schema)


def validate(kind: str, data) -> None:
    """Raise AssertionError naming every place where `data` breaks the `kind` schema."""
    errors = sorted(_validator(kind).iter_errors(data), key=lambda e: list(e.path))
    assert not errors, f"{kind} JSON breaks docs/schemas/{kind}.schema.json:\n" + "\n".join(
        f"  at /{'/'.join(map(str, e.path))}: {e.message[:300]}" for e in errors[:10]
    )
