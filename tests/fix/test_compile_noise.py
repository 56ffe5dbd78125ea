"""Compile seconds judged against the load's noise, both ways, on seconds measured on this machine."""

from __future__ import annotations

from fxlens.fix.measure import verdict


def _compile(before: float, after: float, load: float) -> str:
    return verdict(["compile_s"], {"compile_s": before}, {"compile_s": after}, True, load=load)[0]


def test_a_fall_to_a_twentieth_is_seen_at_any_load_and_runs_of_one_script_are_noise():
    # DETR's regional compile at a load of ~5 per core: 123.6 s -> 6.85 s (the band as a difference
    # was +-125 s, so this read "no effect")
    assert _compile(123.6, 6.85, 5.0) == "helps"
    # two runs of one tiny Llama script at a load of 4.5 per core: 10.8 s and 15.1 s, either order
    assert _compile(10.8, 15.1, 4.5) == "no effect" and _compile(15.1, 10.8, 4.5) == "no effect"
    # on a quiet machine a fall of a third is real, 10% is not
    assert _compile(10.0, 6.5, 1.0) == "helps" and _compile(10.0, 9.0, 1.0) == "no effect"
    assert _compile(10.0, 13.0, 1.0) == "hurts"
