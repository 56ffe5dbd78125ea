"""Recompile root-causing on guard-failure lines as torch 2.13 writes them (pure Python)."""

import pytest

from fxlens.report.rootcause import classify, root_causes
from fxlens.trace.records import Recompile, RecompileLimitHit


@pytest.mark.parametrize(
    "guard, kind, source, values",
    [
        ("0/0: tensor 'x' size mismatch at index 0. expected 8, actual 5", "size", "x", ("8", "5")),
        ("1/0: tensor 'x' stride mismatch at index 1. expected 1, actual 4", "stride", "x", ("1", "4")),
        ("0/0: tensor 'x' rank mismatch. expected 2, actual 3", "ndim", "x", ("2", "3")),
        (
            "1/0: tensor 'x' dtype mismatch. expected Float, actual Double",
            "dtype",
            "x",
            ("float32", "float64"),
        ),
        (
            "1/0: tensor 'x' requires_grad mismatch. expected requires_grad=0",
            "requires_grad",
            "x",
            ("False", "True"),
        ),
        (
            "0/0: self._modules['drop'].training == True",
            "training",
            "self._modules['drop']",
            ("train", "eval"),
        ),
        ("0/2: G['USE_BIAS'] == True", "global", "USE_BIAS", ("True", "")),
        ("3/0: ___stack1 == 1.7260961532592773", "item_value", "___stack1", ("1.7260961532592773", "")),
        ("0/0: L['k'] == 0", "value", "L['k']", ("0", "")),
        ("0/0: k == 0", "value", "k", ("0", "")),
        ("0/0: len(L['xs']) == 3", "length", "L['xs']", ("3", "")),
        ("0/2: not args", "length", "args", ("", "")),
        ("0/0: ___check_obj_id(L['fn'], 140234)", "identity", "L['fn']", ("", "")),
        ("0/0: something torch invents next", "other", "", ("", "")),
    ],
)
def test_classify(guard, kind, source, values):
    k, src, _dim, exp, act = classify(guard)
    assert (k, src, (exp, act)) == (kind, source, values)


def _rc(cid, *guards, function="f", co_name="f"):
    return Recompile(cid, None, function, "m.py", 3, guards, co_name)


def test_new_kind_is_the_cause_not_the_older_entries():
    # 0/2 was caused by the train->eval switch; the size mismatch against 0/1 is old news
    rcs = [
        _rc("0/1", "0/0: tensor 'x' size mismatch at index 0. expected 4, actual 2"),
        _rc(
            "0/2",
            "0/1: tensor 'x' size mismatch at index 0. expected 2, actual 4",
            "0/0: L['self'].training == True",
        ),
    ]
    causes = {c.kind: c for c in root_causes(rcs)}
    assert causes["size"].count == 1 and causes["size"].values == ("4", "2")
    assert causes["training"].count == 1 and causes["training"].compile_ids == ("0/2",)


def test_dtype_storm_lists_every_dtype_in_order():
    rcs = [
        _rc("0/1", "0/0: tensor 'x' dtype mismatch. expected Float, actual Double"),
        _rc(
            "0/2",
            "0/1: tensor 'x' dtype mismatch. expected Double, actual Half",
            "0/0: tensor 'x' dtype mismatch. expected Float, actual Half",
        ),
    ]
    (cause,) = root_causes(rcs)
    assert cause.message == "dtype of `x` took float32, float64, float16"
    assert cause.count == 2 and "x.float()" in cause.fix


def test_limit_hit_is_mentioned_in_the_fix():
    rcs = [_rc("0/1", "0/0: k == 0"), _rc("0/2", "0/1: k == 1", "0/0: k == 0")]
    (cause,) = root_causes(rcs, [RecompileLimitHit("0/3", None, "f", "m.py", 3, 2)])
    assert cause.values == ("0", "1") and cause.count == 2
    assert "recompile limit" in cause.fix and "dynamic=True" in cause.fix


def test_size_fix_fits_the_tensor_that_changed():
    # guard lines as torch 2.13 logged them for HF generate() with a compiled forward (prefill,
    # then one-token decode steps growing the KV cache), and a sequence-length change in training
    kv = "0/1: tensor 'kwargs['cache'].layers[0].keys' size mismatch at index 2. expected 8, actual 9"
    rcs = [
        _rc("0/1", "0/0: tensor 'kwargs['input_ids']' size mismatch at index 1. expected 8, actual 1"),
        _rc("0/2", kv, "0/0: tensor 'kwargs['input_ids']' size mismatch at index 1. expected 8, actual 1"),
    ]
    by_subject = {c.subject: c for c in root_causes(rcs)}
    cache = by_subject["input `cache.layers[0].keys`, dim 2"]
    assert 'cache_implementation="static"' in cache.fix and "drop_last" not in cache.fix
    assert "mark_dynamic" not in cache.fix  # the user never holds the cache tensor generate() makes
    # prefill -> decode: the dim became 1, which torch always specialises (issue 29): no automatic
    # dynamic / mark_dynamic advice (tests/fix/test_fix_texts.py runs both), mark_unbacked instead
    seq = by_subject["size 1 of `input_ids`, dim 1"]
    assert "mark_unbacked(input_ids, 1)" in seq.fix and "drop_last" not in seq.fix
    assert "mark_dynamic(" not in seq.fix and "then compiles that dim as dynamic" not in seq.fix
    assert [a["kind"] for a in seq.actions] == ["mark_unbacked"]
    (batch,) = root_causes([_rc("0/1", "0/0: tensor 'x' size mismatch at index 0. expected 4, actual 2")])
    assert "drop_last=True" in batch.fix and "mark_dynamic(x, 0)" in batch.fix


def test_a_guard_in_library_code_is_not_the_users_to_change():
    # torch's comment names where the guard came from: transformers' code (a path under
    # site-packages), or the user's own file (torch shortens it: `mp/g/kinds.py`)
    lib = (
        "0/0: len(args) == 1  # func_name = f(args)  # transformers/utils/deprecation.py:131 in wrapped_func"
    )
    user = "0/0: len(xs) == 2  # def lst(xs): return sum(xs)  # mp/g/kinds.py:26 in lst"
    (c_lib,) = root_causes([_rc("0/1", lib)])
    (c_user,) = root_causes([_rc("0/1", user)])
    assert "the guard is in transformers/utils/deprecation.py:131, a library's code" in c_lib.fix
    assert "pad it to a fixed length" in c_user.fix and "library" not in c_user.fix


def test_cache_note_is_not_blamed_beside_a_guard():
    # torch's wording (torch/_dynamo/guards.py): "Cache line invalidated because {obj} got deallocated"
    note = "0/0: Cache line invalidated because L['m'] got deallocated"
    typ = "0/0: ___check_type_id(L['x'], 94066752)"
    (c,) = root_causes([_rc("0/1", note, typ)])
    assert c.kind == "type"
    (alone,) = root_causes([_rc("0/1", note)])
    assert alone.kind == "cache_note" and "Cache line invalidated" in alone.subject and "alive" in alone.fix


def test_torchs_hint_is_the_fix_where_no_rule_matches():
    guard = "0/0: ___some_new_check(L['x'])  # y = f(x)  # m.py:3 in f (HINT: do the thing torch says)"
    (c,) = root_causes([_rc("0/1", guard)])
    assert c.kind == "other" and c.fix == "torch's hint: do the thing torch says"
