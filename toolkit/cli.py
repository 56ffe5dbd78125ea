"""`fxlens` command line: one subcommand per capability, dispatched through COMMANDS.

For the commands that run a script (run, bisect, minify, doctor), fxlens options come before SCRIPT
(or `-m MODULE`), and everything after it belongs to the script, untouched, as with
`python -m cProfile` and `torchrun`: `fxlens run train.py --backend nccl` passes `--backend nccl`
to train.py. A literal `--` before SCRIPT ends fxlens's options; one right after SCRIPT is dropped
(the old way to protect the script's arguments, still accepted).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable

from fxlens import __version__
from fxlens.errors import FxlensError
from fxlens.trace.sanitize import SafeStream

# subcommand -> (module implementing `add_arguments(parser)` and `main(args) -> int`, help line)
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("fxlens.capture.command", "run SCRIPT with capture on and print what torch.compile did"),
    "report": ("fxlens.report.command", "report on a session, a TORCH_TRACE directory or a log file"),
    "bisect": (
        "fxlens.bisect.command",
        "step the backend ladder to find the stage, graph and kernel at fault",
    ),
    "minify": ("fxlens.minify.command", "shrink a failing compiled model to a standalone reproducer script"),
    "diff": (
        "fxlens.diff.command",
        "what is new, gone or changed between two sessions or traces (exit 1 when B is worse)",
    ),
    "doctor": (
        "fxlens.doctor.command",
        "eager vs compiled side by side, and a ranked list of what to change",
    ),
    "fix": (
        "fxlens.fix.command",
        "try each fix the findings name in a re-run, and measure it before -> after",
    ),
    # the TUI is the only part that imports textual; loaded by name so the toolkit never does
    "tui": ("fxlens.tui.app", "browse a session or trace in the terminal"),
    "demo": ("fxlens.demo", "run the bundled example through every capability"),
}

# the commands that take SCRIPT [ARGS...] (or -m MODULE [ARGS...]), with an example each for --help
SCRIPT_COMMANDS = {
    "run": "fxlens run --backend inductor --json report.json train.py --lr 3e-4 --json metrics.json",
    "bisect": "fxlens bisect --check accuracy train.py --backend nccl",
    "minify": "fxlens minify --out repro.py -m mypkg.train --out results/",
    "doctor": "fxlens doctor --rounds 3 -m mypkg.train --epochs 1",
    "fix": "fxlens fix --json fixes.json train.py --epochs 1",
}


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    """The parser's options that take a value (the token after them is theirs, not SCRIPT)."""
    return {s for a in parser._actions if a.nargs != 0 for s in a.option_strings}


def split_target(
    tokens: list[str], value_flags: set[str]
) -> tuple[list[str], str | None, str | None, list[str]]:
    """Split a script command's tokens into (fxlens options, SCRIPT, MODULE, the script's ARGS).

    fxlens options end at the first token that is not an option (SCRIPT), at `-m MODULE`, or at a
    literal `--` (the token after it is SCRIPT); everything after SCRIPT/MODULE is the script's.
    """
    head: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "--":
            i += 1
            break
        if tok == "-m" or (tok.startswith("-m") and not tok.startswith("--")):
            module = tok[2:] or (tokens[i + 1] if i + 1 < len(tokens) else None)
            rest = tokens[i + (1 if tok[2:] else 2) :]
            return head, None, module, rest
        if not tok.startswith("-") or tok == "-":
            break
        head.append(tok)
        if tok.split("=", 1)[0] in value_flags and "=" not in tok and i + 1 < len(tokens):
            head.append(tokens[i + 1])
            i += 1
        i += 1
    if i >= len(tokens):
        return head, None, None, []
    rest = tokens[i + 1 :]
    if rest[:1] == ["--"]:  # `fxlens run train.py -- --lr 3`: the old separator, dropped
        rest = rest[1:]
    return head, tokens[i], None, rest


def _help_width() -> int:
    """What argparse's help wraps to (`shutil.get_terminal_size`, less 2), found without importing
    shutil: argparse imports it for every formatter, and with it bz2, lzma and zlib, on every start."""
    try:
        cols = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        cols = 0
    if cols <= 0:
        try:
            cols = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            cols = 0
    return (cols or 80) - 2


class _Help(argparse.HelpFormatter):
    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        super().__init__(prog, indent_increment, max_help_position, _help_width() if width is None else width)


class _RawHelp(argparse.RawDescriptionHelpFormatter, _Help):
    pass


def build_parser(
    only: str | None = None,
) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The parser; only the subcommand `only` loads its module (so `fxlens run` never imports textual)."""
    parser = argparse.ArgumentParser(
        prog="fxlens",
        formatter_class=_Help,
        description="Debug torch.compile: graphs, graph breaks, recompiles, bisect, minify, doctor, TUI.",
        epilog="Run `fxlens demo` for a tour. `fxlens COMMAND --help` documents each command.",
    )
    parser.add_argument("--version", action="version", version=f"fxlens {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers = {}
    for name, (module, help_line) in COMMANDS.items():
        if only in COMMANDS and name != only:
            continue  # `fxlens report ...` parses with report's parser alone: each one built costs ~1 ms
        p = sub.add_parser(name, help=help_line, description=help_line, formatter_class=_Help)
        subparsers[name] = p
        p.set_defaults(_module=module)
        if name in SCRIPT_COMMANDS:
            p.usage = f"fxlens {name} [OPTIONS] (SCRIPT | -m MODULE) [ARGS...]"
            p.formatter_class = _RawHelp
            p.epilog = (
                "fxlens options come before SCRIPT (or -m MODULE, run as `python -m` would); every\n"
                "ARG after it is the script's own, untouched, even one spelled like an fxlens option.\n"
                f"example:\n  {SCRIPT_COMMANDS[name]}"
            )
        if name == only:
            _load(module, "add_arguments")(p)
    return parser, subparsers


def _load(module: str, attr: str) -> Callable:
    if module in sys.modules:
        return getattr(sys.modules[module], attr)
    from fxlens.trace.classcode import cached

    # the methods dataclasses writes for the command's records: compiled once, not at every start
    with cached(module.rsplit(".", 1)[0].removeprefix("fxlens.")):
        return getattr(importlib.import_module(module), attr)


def parse(argv: list[str]) -> argparse.Namespace:
    parser, subparsers = build_parser(argv[0] if argv else None)
    if not argv or argv[0] not in SCRIPT_COMMANDS:
        return parser.parse_args(argv)
    sp = subparsers[argv[0]]
    head, script, module, rest = split_target(argv[1:], _flags(sp))
    args = sp.parse_args(head)  # --help and bad fxlens options end here, as argparse does
    if module is not None:
        from fxlens.capture.command import module_script

        script = module_script(module)
    elif script is None:
        sp.error("SCRIPT or -m MODULE is required")
    args.script, args.module, args.script_args = script, module, rest
    args._module = COMMANDS[argv[0]][0]
    args.command = argv[0]
    return args


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["tui"]:  # Textual owns the terminal (and escapes what it shows itself)
        return _main(argv)
    # text from traces and scripts (names, reasons, exception text) reaches our prints: whatever a
    # printer forgets, control characters are shown escaped, never sent to the terminal
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = SafeStream(sys.stdout), SafeStream(sys.stderr)
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = saved


def _main(argv: list[str]) -> int:
    from fxlens.capture import children
    from fxlens.live import progress

    children.install_sigterm()  # SIGTERM cleans up like Ctrl-C (exit 143), not a bare death
    progress.enable(argv[:1] != ["tui"])  # long waits show progress on a terminal; Textual owns the TUI's
    try:
        args = parse(argv)
        if not getattr(args, "command", None):
            build_parser()[0].print_help()
            return 0
        return int(_load(args._module, "main")(args) or 0)
    except FxlensError as e:
        progress.clear()
        print(f"fxlens {argv[0] if argv else ''}: error: {e}".replace("  ", " "), file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (children.Terminated)
        from fxlens.capture import children

        children.end_all()  # every child process group, with whatever it forked
        progress.clear()
        terminated = isinstance(e, children.Terminated)
        print(f"fxlens: {'terminated' if terminated else 'interrupted'}", file=sys.stderr)
        return 143 if terminated else 130
    except Exception as e:  # an fxlens bug: still one line, the traceback on request
        progress.clear()
        if os.environ.get("FXLENS_DEBUG"):
            raise
        print(
            f"fxlens: internal error: {type(e).__name__}: {e} (FXLENS_DEBUG=1 shows the traceback)",
            file=sys.stderr,
        )
        return 70


if __name__ == "__main__":
    sys.exit(main())
