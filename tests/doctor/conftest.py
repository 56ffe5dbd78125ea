"""Fixtures: each real script in tests/doctor/scripts goes through `fxlens doctor` once per test run
(shared by the xdist workers through `build_once`: several tests read the same doctor result)."""

import hashlib
import json
import subprocess
from pathlib import Path

import pytest
from doctor_helpers import SCRIPTS, fxlens
from schema_check import validate


@pytest.fixture(scope="session")
def doctor_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("doctor_sessions")
    return root


@pytest.fixture(scope="session")
def doctored(build_once):
    """`doctored("hurts", "--rounds", "2")` -> (CompletedProcess, result dict) of `fxlens doctor --json`."""

    def run(name, *extra):
        tag = hashlib.sha1(json.dumps([str(name), *map(str, extra)]).encode()).hexdigest()[:10]

        # a name of scripts/, or the path of a script another folder's tests share
        script = name if isinstance(name, Path) else SCRIPTS / f"{name}.py"

        def fill(root):
            out = root / f"{script.stem}.json"
            proc = fxlens("doctor", "--json", out, *extra, script, env_root=root / "sessions")
            keep = {
                "args": proc.args,
                "returncode": proc.returncode,
                "stdout": proc.stdout,
                "stderr": proc.stderr,
            }
            (root / "proc.json").write_text(json.dumps(keep))

        root = build_once(f"doctor-{name}-{tag}", fill)
        proc = subprocess.CompletedProcess(**json.loads((root / "proc.json").read_text()))
        out = root / f"{name}.json"
        result = json.loads(out.read_text()) if out.exists() else None
        if result is not None:
            validate("doctor", result)
        return proc, result

    return run
