"""A call that changes its own arguments (a cache it appends to) is not re-timed by doctor: each replay
would time another call. Ground truth: the script itself prints how its cache grew."""

import subprocess
import sys

import torch
from doctor_helpers import SCRIPTS

from fxlens.probe.argstate import changed, fingerprint


class _Layer:
    def __init__(self, n):
        self.keys = torch.zeros(1, n, 4)
        self.values = torch.zeros(1, n, 4)


class _Cache:  # the shape of a HF DynamicCache: cache.layers[i].keys / .values
    def __init__(self, n):
        self.layers = [_Layer(n), _Layer(n)]


def test_a_cache_that_grows_is_a_changed_argument_and_an_update_in_place_is_not():
    cache, x = _Cache(3), torch.ones(2)
    before = fingerprint((x,), {"past_key_values": cache})
    cache.layers[1].keys = torch.cat([cache.layers[1].keys, torch.zeros(1, 1, 4)], dim=1)
    why = changed(before, fingerprint((x,), {"past_key_values": cache}))
    assert why == "`past_key_values.layers[1].keys` went from shape [1, 3, 4] to [1, 4, 4]"
    # the same work next time: an update in place, a same-shape replacement (a static cache)
    before = fingerprint((x,), {"past_key_values": cache})
    x.add_(1)
    cache.layers[0].values = torch.ones(1, 3, 4)
    assert changed(before, fingerprint((x,), {"past_key_values": cache})) is None
    # a module in the arguments is the model's state, not the call's: not walked
    assert fingerprint((torch.nn.Linear(2, 2),), {}) == {}


def test_doctor_does_not_retime_a_call_that_grows_its_cache(doctored):
    plain = subprocess.run([sys.executable, str(SCRIPTS / "grows_cache.py")], capture_output=True, text=True)
    assert "cache length 20" in plain.stdout  # the cache grows by one a call: each call is another
    proc, result = doctored("grows_cache", "--budget", "5")
    assert proc.returncode == 0, proc.stderr
    (row,) = result["functions"]
    t = row["timing"]
    assert t["method"] == "separate_runs"
    assert t["why"].startswith(
        "not replayed: each call changes its arguments (`cache.layers[0]['keys']` went from shape"
    )
    assert "not replayed: each call changes its arguments" in proc.stdout
