"""Fixtures: run the real scripts in tests/capture/scripts through `fxlens run` once per module."""

import json
import os

import pytest
from capture_helpers import SCRIPTS, fxlens
from schema_check import validate


@pytest.fixture(scope="session")
def sessions_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("sessions")
    os.environ["FXLENS_SESSIONS_DIR"] = str(root)
    return root


@pytest.fixture(scope="session")
def run_report(sessions_root, tmp_path_factory):
    """`run_report("breaks")` -> (CompletedProcess, report dict) of `fxlens run scripts/breaks.py --json`."""
    cache = {}

    def run(name, *extra):
        key = (name, extra)
        if key not in cache:
            out = tmp_path_factory.mktemp("json") / f"{name}.json"
            proc = fxlens("run", "--json", out, *extra, SCRIPTS / f"{name}.py")
            report = json.loads(out.read_text()) if out.exists() else None
            if report is not None:
                validate("report", report)
            cache[key] = (proc, report)
        return cache[key]

    return run
