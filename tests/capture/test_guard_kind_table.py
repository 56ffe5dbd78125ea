"""Every kind of guard the installed torch's guard code can build, and the rule that reads its
failure: a kind of ours, or "other" (the cause then shows torch's own guard text, never a guess).

The kinds are read from torch itself: the GuardBuilder methods in torch/_dynamo/guards.py (each
builds the guard text a recompile prints), and the failure strings the C++ guard manager writes
(found in torch's own binary). A torch release that adds a kind fails this test until it has a row.
"""

import importlib.util
import re
from pathlib import Path

import pytest

from fxlens.report.rootcause import root_causes
from fxlens.trace.guards import parse_failed_guard
from fxlens.trace.records import Recompile

TORCH = Path(importlib.util.find_spec("torch").origin).parent

# GuardBuilder kind -> failure texts as torch writes them (the f-strings in guards.py, filled in) and
# the kind fxlens reads each as; "other": no rule of ours, torch's own text is the cause
TABLE = {
    "HASATTR": [
        ("hasattr(L['x'], 'scale')", "hasattr"),
        ("not hasattr(L['x'], 'scale')", "hasattr"),
        ("not ___dict_contains('step_count', self.__dict__)", "instance_attr"),
    ],
    "TYPE_MATCH": [("___check_type_id(L['x'], 94066752), type=<class 'list'>", "type")],
    "FAKE_SCRIPT_TYPE_MATCH": [("___check_fake_script_type(L['q'], 9406), type=<class 'Foo'>", "other")],
    "DICT_VERSION": [("___dict_version(G['table']) == 3", "dict_version")],
    "DICT_CONTAINS": [("___dict_contains('mask', L['batch'])", "dict_key")],
    "DICT_NOT_CONTAINS": [("not ___dict_contains('mask', L['batch'])", "dict_key")],
    "SET_CONTAINS": [("set.__contains__(G['names'], 'a')", "other")],
    "SET_NOT_CONTAINS": [("not set.__contains__(G['names'], 'a')", "other")],
    "BOOL_MATCH": [("L['flag'] == True", "value")],
    "NONE_MATCH": [("L['mask'] is None", "none")],
    "ID_MATCH": [("___check_obj_id(L['fn'], 140234), type=<class 'function'>", "identity")],
    "NOT_NONE_MATCH": [("L['mask'] is not None", "none")],
    "DISPATCH_KEY_SET_MATCH": [("L['ks'].raw_repr() == DispatchKeySet(CPU).raw_repr()", "dispatch_keys")],
    "DUAL_LEVEL": [("torch.autograd.forward_ad._current_level == -1", "other")],
    "FUNCTORCH_STACK_MATCH": [("torch._functorch.pyfunctorch.compare_functorch_state([])", "other")],
    "AUTOGRAD_SAVED_TENSORS_HOOKS": [
        ("torch._functorch.aot_autograd.utils.top_saved_tensors_hooks ids == None", "saved_tensors_hooks")
    ],
    "TENSOR_SUBCLASS_METADATA_MATCH": [("___check_metadata_1398_c0/0", "other")],
    "DTENSOR_SPEC_MATCH": [("__dtensor_spec_1398", "other")],
    "OPAQUE_OBJ_GUARD_FN_MATCH": [("___check_opaque_guard_fn_1398_c0/0", "other")],
    "EQUALS_MATCH": [("L['k'] == 2", "value"), ("L['self'].k == 2", "module_attr")],
    "CONSTANT_MATCH": [("L['mode'] == 'mean'", "value")],
    "CONSTANT_SUBCLASS_MATCH": [("int(L['n']) == 3", "value")],
    "NN_MODULE": [("___check_obj_id(L['self'].head, 1398), type=<class 'Linear'>", "identity")],
    "FUNCTION_MATCH": [("___check_obj_id(G['act'], 1398), type=<class 'function'>", "identity")],
    "CLASS_MATCH": [("___check_obj_id(G['Cls'], 1398), type=<class 'type'>", "identity")],
    "MODULE_MATCH": [("___check_obj_id(G['np'], 1398), type=<class 'module'>", "identity")],
    "CLOSURE_MATCH": [("___check_obj_id(L['fn'].__code__, 1398), type=<class 'code'>", "identity")],
    "BUILTIN_MATCH": [("___check_obj_id(G['__builtins_dict___0']['len'], 1398)", "identity")],
    "SEQUENCE_LENGTH": [("len(L['xs']) == 3", "length"), ("not L['args']", "length")],
    "TUPLE_ITERATOR_LEN": [("___tuple_iterator_len(L['it']) == 3", "other")],
    "RANGE_ITERATOR_MATCH": [("___normalize_range_iter(L['r']) == (0, 4, 1)", "other")],
    "COUNT_ITERATOR_MATCH": [("___normalize_count_iter(L['c']) == (0, 1)", "other")],
    "DUPLICATE_INPUT": [
        ("L['b'] is L['a']", "aliasing"),
        ("Duplicate tensors found: L['a'] is L['b']", "aliasing"),
    ],
    "WEAKREF_ALIVE": [("L['ref'] is not None", "none")],
    "MAPPING_KEYS_CHECK": [("list(L['d'].keys()) == ['a', 'b']", "dict_keys")],
    "DICT_KEYS_MATCH": [("list(dict.keys(L['d'])) == ['a', 'b']", "dict_keys")],
    "EMPTY_NN_MODULE_HOOKS_DICT": [("len(L['self']._forward_hooks) == 0", "hooks")],
    "GRAD_MODE": [("GLOBAL_STATE changed: grad_mode", "grad_mode")],
    "DETERMINISTIC_ALGORITHMS": [("GLOBAL_STATE changed: deterministic_algorithms", "deterministic")],
    "FSDP_TRAINING_STATE": [("GLOBAL_STATE changed: grad_mode", "grad_mode")],  # guarded as global state
    "GLOBAL_STATE": [
        ("GLOBAL_STATE changed: autocast(cpu)_enabled", "autocast"),
        ("GLOBAL_STATE changed: default_dtype", "default_dtype"),
        ("GLOBAL_STATE changed: num_threads", "num_threads"),
    ],
    "TORCH_FUNCTION_STATE": [("___check_torch_function_mode_stack()", "torch_function_mode")],
    "DEFAULT_DEVICE": [("utils_device.CURRENT_DEVICE == None", "default_device")],
    "SHAPE_ENV": [
        ("2 <= L['x'].size()[0]", "size_one"),
        ("L['x'].size()[0] <= 6", "size_branch"),
        ("Eq(L['x'].size()[0], 2*L['y'].size()[0])", "shape_relation"),
    ],
    "TENSOR_MATCH": [
        ("tensor 'x' size mismatch at index 0. expected 4, actual 5", "size"),
        ("tensor 'x' stride mismatch at index 0. expected 3, actual 1", "stride"),
        ("tensor 'x' rank mismatch. expected 1, actual 2", "ndim"),
        ("tensor 'x' dtype mismatch. expected Float, actual Double", "dtype"),
        ("tensor 'x' requires_grad mismatch. expected requires_grad=0", "requires_grad"),
        ("tensor 'x' dispatch key set mismatch. expected ..., actual ...", "dispatch_keys"),
        ("tensor 'x' device mismatch. expected cpu, actual cuda:0", "device"),
        ("expected type of 'L['kv']' to be a tensor type, ' but found <class 'NoneType'>", "type"),
    ],
}

# failure texts the C++ guard manager (or the cache) writes, with the bytes that must be in torch's
# binary or Python source for the row to be the installed torch's own wording
NATIVE = [
    (b"GLOBAL_STATE changed: ", "GLOBAL_STATE changed: grad_mode", "grad_mode"),
    (b" mismatch at index ", "tensor 'x' size mismatch at index 0. expected 4, actual 5", "size"),
    (
        b"Cache line invalidated because ",
        "Cache line invalidated because L['m'] got deallocated",
        "cache_note",
    ),
    (
        b"BACKEND_MATCH failure",
        "BACKEND_MATCH failure: torch.compile detected different backend callables.",
        "other",
    ),
]


def _builder_kinds() -> set[str]:
    src = (TORCH / "_dynamo" / "guards.py").read_text()
    start = src.index("class GuardBuilder")
    body = src[start : src.index("\nclass ", start + 10)]
    return set(re.findall(r"\n    def ([A-Z][A-Z0-9_]+)\(self", body))


def test_every_guard_kind_of_the_installed_torch_has_a_row():
    kinds = _builder_kinds()
    assert len(kinds) > 30  # the reading of torch's source still finds its builder
    assert kinds <= set(TABLE), sorted(kinds - set(TABLE))


@pytest.mark.parametrize("kind", sorted(TABLE))
def test_each_row_reads_as_its_kind_and_shows_torchs_text(kind):
    for text, expected in TABLE[kind]:
        g = parse_failed_guard(f"0/0: {text}")
        assert g.kind == expected, (kind, text, g)
        (cause,) = root_causes([Recompile("0/1", None, "f", "m.py", 3, (f"0/0: {text}",))])
        assert cause.guard == g.text  # torch's own guard, beside every cause
        if expected == "other":  # no rule: the cause says torch's text, and no fix of ours
            assert "torch's guard" in cause.fix and g.text[:40] in cause.subject + cause.fix


def test_native_failure_strings_are_the_installed_torchs():
    blobs = [p.read_bytes() for p in (TORCH / "lib").glob("libtorch_python*")]
    blobs.append((TORCH / "_dynamo" / "guards.py").read_bytes())
    for needle, text, expected in NATIVE:
        assert any(needle in b for b in blobs), needle
        assert parse_failed_guard(f"0/0: {text}").kind == expected


def test_instance_attribute_over_a_class_attribute_is_not_a_length():
    text = "not ___dict_contains('step_count', self.__dict__)  # return x * (self.step_count + 1)  # m.py:11 in forward"
    (cause,) = root_causes([Recompile("0/1", None, "forward", "m.py", 9, (f"0/0: {text}",))])
    assert cause.kind == "instance_attr" and "`self.step_count`" in cause.subject
    assert "pad it" not in cause.fix and "`__init__`" in cause.fix


def test_instance_attribute_read_from_a_real_recompile():
    import os
    import subprocess
    import sys

    from capture_helpers import SCRIPTS

    err = subprocess.run(
        [sys.executable, str(SCRIPTS / "instance_attr.py")],
        capture_output=True,
        text=True,
        env={**os.environ, "TORCH_LOGS": "recompiles"},
        timeout=300,
    ).stderr
    (line,) = [ln.split("- ", 1)[1] for ln in err.splitlines() if "___dict_contains" in ln]
    g = parse_failed_guard(line)
    assert (g.kind, g.name, g.expected, g.actual) == ("instance_attr", "self.step_count", "absent", "present")
