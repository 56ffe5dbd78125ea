"""A backend that always fails: `fxlens doctor hurts.py --backend bad_backend.py:bad`."""


def bad(gm, example_inputs):
    raise RuntimeError("backend exploded")  # line 5
