"""Fixtures: each real script in tests/doctor/scripts goes through `fxlens doctor` once per session."""

import json

import pytest
from doctor_helpers import SCRIPTS, fxlens


@pytest.fixture(scope="session")
def doctor_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("doctor_sessions")
    return root


@pytest.fixture(scope="session")
def doctored(doctor_root, tmp_path_factory):
    """`doctored("hurts", "--rounds", "2")` -> (CompletedProcess, result dict) of `fxlens doctor --json`."""
    cache = {}

    def run(name, *extra):
        key = (name, extra)
        if key not in cache:
            out = tmp_path_factory.mktemp("json") / f"{name}.json"
            proc = fxlens("doctor", "--json", out, *extra, SCRIPTS / f"{name}.py", env_root=doctor_root)
            cache[key] = (proc, json.loads(out.read_text()) if out.exists() else None)
        return cache[key]

    return run
