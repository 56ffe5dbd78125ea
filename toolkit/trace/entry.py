"""Where a compile's code came from, in the user's terms, when torch compiled a library frame.

`torch.compile(nn.Sequential(...))` compiles torch's `inner` wrapper (torch/_dynamo/external_utils.py),
an HF model compiles transformers' `wrapped_func` decorator, and `torch.compile(DDP(model))` compiles
DDP's `forward`: none of those is a place the user can act on. The compile's records still say what
the user compiled and from where:
- the guard tree (`dynamo_cpp_guards_str`) names the type of the module behind the wrapper
  (`source=L['fn'] ... type=<class 'torch.nn.modules.container.Sequential'>`), so the function reads
  `Sequential.forward`;
- the entry stack (`dynamo_start`) holds the user's call line (`train.py:27`), which is where the
  graph, break or recompile is placed; the library frame is kept beside it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fxlens.trace.records import Frame
from fxlens.trace.userfiles import is_user_file, library_path
from fxlens.trace.userframes import user_function

# the wrapper's local that holds the user's module, most specific first
_MODULE_SOURCES = ("L['fn']", "L['self']", "L['args'][0]", "L['mod']", "L['module']")
# generic wrapper frames (torch's, transformers' decorators) and the module's own forward
_WRAPPERS = {
    "inner",
    "wrapper",
    "wrapped_func",
    "_fn",
    "decorate_context",
    "new_forward",
    "forward",
    "_call_impl",
}
_NOT_A_MODULE = re.compile(r"^(?:builtins\.|torch\.Tensor$|torch\.nn\.parameter\.|tuple$|dict$|list$)")


def module_class(guards_text: str) -> str:
    """The class name of the module a wrapper frame called, from torch's guard tree ("" if none)."""
    for src in _MODULE_SOURCES:
        m = re.search(re.escape(f"source={src},") + r"[^\n]*?, type=<class '(?P<cls>[\w\.]+)'>", guards_text)
        if m and not _NOT_A_MODULE.match(m["cls"]):
            return m["cls"].rsplit(".", 1)[-1]
    return ""


@dataclass(frozen=True)
class Entry:
    """A compile's place for the user: function name, file and line, and the library frame compiled."""

    function: str
    file: str
    line: int
    library: str = ""  # "transformers/utils/deprecation.py:126 in wrapped_func" when a library frame


def user_entry(co_name: str, file: str, line: int, stack: list[Frame], guards_text: str = "") -> Entry:
    """The user's view of a compiled frame (as is when the frame is the user's own code)."""
    fn = user_function(co_name)
    if not file or is_user_file(file):
        return Entry(fn, file, line)
    caller = next((f for f in reversed(stack) if is_user_file(f.file)), None)
    cls = module_class(guards_text) if guards_text else ""
    # a wrapper around the module's call, or the module's own forward (resumed after a break)
    name = f"{cls}.forward" if cls and fn in _WRAPPERS else fn
    library = f"{library_path(file)}:{line} in {co_name}"
    if caller is None:  # nothing of the user's on the stack (a library calling a library)
        return Entry(name, file, line, library)
    return Entry(name, caller.file, caller.line, library)
