"""A reproducer's name is claimed atomically: two minify runs at once never share (and so never
overwrite) one file. Before, both picked the first free name, verified for minutes, then both
wrote it: the second run replaced the first's reproducer."""

import multiprocessing
import os

import pytest

from fxlens.errors import FxlensError
from fxlens.minify.repro_writer import claim, release


def _claim_after(barrier, target: str, queue) -> None:
    barrier.wait()  # both processes claim at the same moment
    queue.put(str(claim(target, also=(".pt",))))


def test_two_concurrent_claims_of_one_default_name_get_two_files(tmp_path):
    target = tmp_path / "repro_cases" / "minify_s_inductor_crash.py"
    ctx = multiprocessing.get_context("fork")
    for _ in range(5):  # several rounds: a race that loses only sometimes must still never lose
        barrier, queue = ctx.Barrier(2), ctx.Queue()
        procs = [ctx.Process(target=_claim_after, args=(barrier, str(target), queue)) for _ in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        got = {queue.get(timeout=10), queue.get(timeout=10)}
        assert len(got) == 2, got
    names = sorted(p.name for p in target.parent.iterdir())
    # 10 claims, 10 distinct .py names, each with its .pt beside it
    assert len([n for n in names if n.endswith(".py")]) == 10
    assert len([n for n in names if n.endswith(".pt")]) == 10


def test_a_taken_name_is_never_replaced(tmp_path):
    first = tmp_path / "r.py"
    first.write_text("the first run's reproducer\n")
    (tmp_path / "r_2.pt").write_text("someone's values\n")  # r_2 has its .pt taken: skipped whole
    got = claim(first, also=(".pt",))
    assert got == tmp_path / "r_3.py" and got.read_text() == ""
    assert first.read_text() == "the first run's reproducer\n"
    assert not (tmp_path / "r_2.py").exists()  # the half-claimed r_2 was given back
    with pytest.raises(FxlensError, match="already exists"):
        claim(first, numbered=False)


def test_release_removes_only_an_unwritten_claim(tmp_path):
    a = claim(tmp_path / "a.py")
    b = claim(tmp_path / "b.py")
    b.write_text("written\n")
    release(a)
    release(b)
    assert not a.exists() and b.read_text() == "written\n"
    assert os.listdir(tmp_path) == ["b.py"]
