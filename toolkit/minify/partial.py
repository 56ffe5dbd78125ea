"""Writing a reproducer safely: never half a file under its real name, and the best one so far
as NAME.partial.py when minify is interrupted while verifying it."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path


def save_partial(staged: Path, target: Path, also: tuple[str, ...]) -> None:
    """The staged (reduced, not yet verified) reproducer as NAME.partial.py, its path printed."""
    if not staged.exists():
        return
    from fxlens.minify.repro_writer import claim  # imports torch: a refusal before any run must not

    partial = claim(target.with_name(target.stem + ".partial.py"), numbered=True, also=also)
    text = staged.read_text()
    if also:  # the recorded values, under the partial's own name
        values = staged.with_name(target.with_suffix(".pt").name)
        text = text.replace(repr(values.name), repr(partial.with_suffix(".pt").name))
        copy_atomic(values, partial.with_suffix(".pt"))
    tmp = staged.with_name(partial.name)
    tmp.write_text(
        text.replace("# nodes:", "# note: interrupted while verifying: not re-verified\n# nodes:", 1)
    )
    copy_atomic(tmp, partial)
    print(
        f"fxlens minify: interrupted; the best reproducer so far (not verified): {partial}", file=sys.stderr
    )


def copy_atomic(src: Path, dest: Path) -> None:
    """Copy via a temporary name and a rename: an interrupt or a full disk never leaves half a
    reproducer under its real name."""
    tmp = dest.with_name(f".{dest.name}.tmp")
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
