"""`peak_memory=` budgets (marker, fixture, `fxlens.expect`) on a planted compile whose peak is known.

The planted function repeats its input 64 times and doubles the copy: run by the eager backend,
both 64-row tensors are alive at once, so the block's tensor peak is at least their bytes, counted
here by hand from the tensors themselves (`nbytes`), not by the profiler the budget reads.
"""

import pytest
import torch

from fxlens import expect
from fxlens.budget.excess import Limits
from fxlens.budget.memory import parse_bytes

pytest_plugins = ["pytester"]

N = 4096  # floats per row: each 64-row tensor is 1 MiB


def grow(x):
    y = x.repeat(64, 1)
    return (y * 2).sum(0)


def _by_hand() -> int:
    """The two 64-row tensors alive together (the graph drops the first before the sum): bytes from
    the tensors themselves."""
    x = torch.ones(N)
    y = x.repeat(64, 1)
    return y.nbytes + (y * 2).nbytes


def test_a_cap_fails_when_the_compile_exceeds_it_and_passes_when_not():
    truth = _by_hand()
    assert truth == 2 * 64 * N * 4
    x = torch.ones(N)
    with pytest.raises(AssertionError) as over:
        with expect(peak_memory=truth // 2, reset=True, label="grow"):
            torch.compile(grow, backend="eager")(x)
    msg = str(over.value)
    assert msg.startswith("compile budget exceeded in grow: peak_memory 2.0 MiB > 1.0 MiB")
    assert "test_memory_budget.py" in msg  # the graph it compiled, with its line
    with expect(peak_memory=truth * 2, reset=True) as got:
        torch.compile(grow, backend="eager")(x)
    measured = got.outcome.memory
    # the profiler's peak: the two tensors, and at most the output and what compiling allocates
    assert truth <= measured["cpu"] <= truth + N * 4 + 64 * 1024, (measured, truth)
    assert measured["cuda"] is None and measured["peak"] == measured["cpu"]


def test_parse_bytes_and_bad_values():
    assert parse_bytes(1024) == 1024 and parse_bytes("64MiB") == 64 * 2**20
    assert parse_bytes("1.5 GB") == 1_500_000_000 and parse_bytes("10kib") == 10240
    for bad in (True, -1, "lots", "5 parsecs", [1]):
        with pytest.raises(ValueError, match="peak_memory="):
            parse_bytes(bad)
    assert Limits(peak_memory="2MiB").describe() == "peak_memory<=2.0 MiB"


PLANTED = """
import pytest
import torch

def grow(x):
    y = x.repeat(64, 1)
    return (y * 2).sum(0)

@pytest.mark.compile_budget(peak_memory="1MiB")
def test_marker_over():
    torch.compile(grow, backend="eager")(torch.ones(4096))

@pytest.mark.compile_budget(peak_memory="8MiB", graphs=1)
def test_marker_within():
    torch.compile(grow, backend="eager")(torch.ones(4096))

def test_fixture_over(compile_budget):
    compile_budget(peak_memory=2**20)
    torch.compile(grow, backend="eager")(torch.ones(4096))

@pytest.mark.compile_budget(peak_memory="a lot")
def test_bad_cap():
    pass
"""


def test_the_plugin_accepts_a_memory_cap(pytester):
    pytester.makepyfile(test_planted=PLANTED)
    # -rN: no short summary, whose lines are cut to the terminal's width (so the count
    # below would change with COLUMNS: 2 at 80 columns, 4 on a wide CI terminal)
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", "-rN")
    res.assert_outcomes(passed=1, failed=3)
    out = res.stdout.str()
    assert out.count("compile budget exceeded in the test body: peak_memory 2.0 MiB > 1.0 MiB") == 2
    assert "peak_memory: 2.0 MiB of tensors above the block's start (CPU 2.0 MiB" in out
    assert "@pytest.mark.compile_budget: peak_memory='a lot': expected bytes" in out


def test_nested_blocks_each_see_their_own_peak():
    from fxlens.budget.memory import PeakMemory

    outer = PeakMemory().start()
    kept = torch.ones(1000)  # 4000 bytes, alive to the end
    inner = PeakMemory().start()
    tmp = torch.ones(2000)  # 8000 bytes, freed inside the inner block
    del tmp
    assert inner.stop()["cpu"] == 8000
    more = torch.ones(500)
    assert outer.stop()["cpu"] == 4000 + 8000  # kept + tmp, the inner peak at the outer's level
    del kept, more


def test_memory_from_before_the_block_freed_inside_it_is_left_out():
    # a tensor an earlier block allocated (torch reports its free, having seen it allocated under a
    # profiler) and cyclic garbage a collection frees mid-block: the peak is the block's own bytes
    import gc

    from fxlens.budget.memory import PeakMemory

    first = PeakMemory().start()
    old = torch.ones(1 << 20)  # 4 MiB, allocated under the first block's profiler
    cycle = [torch.ones(1 << 18)]  # 1 MiB in a reference cycle: garbage once dropped
    cycle.append(cycle)
    first.stop()
    del cycle
    block = PeakMemory().start()
    del old
    gc.collect()
    new = torch.ones(1 << 16)
    got = block.stop()
    assert got["cpu"] == new.untyped_storage().nbytes() == 1 << 18
    assert block.level == 1 << 18  # the frees of the 4 MiB and the 1 MiB left the level alone


def test_an_inner_block_freeing_the_outer_blocks_tensor_lowers_the_outers_level():
    from fxlens.budget.memory import PeakMemory

    outer = PeakMemory().start()
    kept = torch.ones(1000)  # 4000 bytes of the outer block
    inner = PeakMemory().start()
    del kept  # freed while the inner block runs
    tmp = torch.ones(500)  # 2000 bytes
    # the inner block never rose above its start (-4000 + 2000): its peak is 0
    assert inner.stop()["cpu"] == 0 and inner.level == -2000
    assert outer.stop()["cpu"] == 4000 and outer.level == 2000  # 4000 - 4000 + 2000
    del tmp
