"""`fxlens` command line: one subcommand per capability, dispatched through COMMANDS.

fxlens options may come before or after SCRIPT; everything after SCRIPT that is not an fxlens
option goes to the script, and everything after a literal `--` goes to the script untouched
(`fxlens run train.py --backend inductor -- --json out.json` passes `--json out.json` to train.py).
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
    "doctor": (
        "fxlens.doctor.command",
        "eager vs compiled side by side, and a ranked list of what to change",
    ),
    # the TUI is the only part that imports textual; loaded by name so the toolkit never does
    "tui": ("fxlens.tui.app", "browse a session or trace in the terminal"),
    "demo": ("fxlens.demo", "run the bundled example through every capability"),
}

# Options that take a value, per subcommand, recognised after SCRIPT (see module docstring).
SCRIPT_COMMANDS = {"run", "bisect", "minify", "doctor"}


def split_script_argv(
    argv: list[str], value_flags: set[str], bool_flags: set[str]
) -> tuple[list[str], list[str]]:
    """Split tokens after SCRIPT into (fxlens tokens, script tokens)."""
    ours: list[str] = []
    theirs: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            theirs.extend(argv[i + 1 :])
            break
        name = tok.split("=", 1)[0]
        if name in value_flags:
            ours.append(tok)
            if "=" not in tok and i + 1 < len(argv):
                ours.append(argv[i + 1])
                i += 1
        elif name in bool_flags:
            ours.append(tok)
        else:
            theirs.append(tok)
        i += 1
    return ours, theirs


def _flags(parser: argparse.ArgumentParser) -> tuple[set[str], set[str]]:
    value, boolean = set(), set()
    for action in parser._actions:
        target = boolean if action.nargs == 0 else value
        target.update(s for s in action.option_strings)
    return value, boolean


def build_parser(
    only: str | None = None,
) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The parser; only the subcommand `only` loads its module (so `fxlens run` never imports textual)."""
    parser = argparse.ArgumentParser(
        prog="fxlens",
        description="Debug torch.compile: graphs, graph breaks, recompiles, bisect, minify, doctor, TUI.",
        epilog="Run `fxlens demo` for a tour. `fxlens COMMAND --help` documents each command.",
    )
    parser.add_argument("--version", action="version", version=f"fxlens {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers = {}
    for name, (module, help_line) in COMMANDS.items():
        p = sub.add_parser(name, help=help_line, description=help_line)
        subparsers[name] = p
        p.set_defaults(_module=module)
        if name in SCRIPT_COMMANDS:
            p.add_argument("script", metavar="SCRIPT", help="the Python script to run as __main__")
            p.epilog = (
                "ARGS after SCRIPT go to the script; put them after `--` if they clash with fxlens options."
            )
        if name == only:
            _load(module, "add_arguments")(p)
    return parser, subparsers


def _load(module: str, attr: str) -> Callable:
    return getattr(importlib.import_module(module), attr)


def parse(argv: list[str]) -> argparse.Namespace:
    parser, subparsers = build_parser(argv[0] if argv else None)
    if argv and argv[0] in SCRIPT_COMMANDS:
        sp = subparsers[argv[0]]
        value_flags, bool_flags = _flags(sp)
        # fxlens options before SCRIPT, then SCRIPT, then a mix (see module docstring)
        head: list[str] = []
        i = 1
        while i < len(argv) and argv[i].startswith("-") and argv[i] != "--":
            head.append(argv[i])
            if argv[i] in value_flags and "=" not in argv[i] and i + 1 < len(argv):
                head.append(argv[i + 1])
                i += 1
            i += 1
        if i < len(argv) and argv[i] != "--":
            script, rest = argv[i], argv[i + 1 :]
            ours, theirs = split_script_argv(rest, value_flags, bool_flags)
            args = sp.parse_args([*head, *ours, script])
            args.script_args = theirs
            args._module = COMMANDS[argv[0]][0]
            args.command = argv[0]
            return args
    return parser.parse_args(argv)


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

    children.install_sigterm()  # SIGTERM cleans up like Ctrl-C (exit 143), not a bare death
    try:
        args = parse(argv)
        if not getattr(args, "command", None):
            build_parser()[0].print_help()
            return 0
        return int(_load(args._module, "main")(args) or 0)
    except FxlensError as e:
        print(f"fxlens {argv[0] if argv else ''}: error: {e}".replace("  ", " "), file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (children.Terminated)
        from fxlens.capture import children

        children.end_all()  # every child process group, with whatever it forked
        terminated = isinstance(e, children.Terminated)
        print(f"fxlens: {'terminated' if terminated else 'interrupted'}", file=sys.stderr)
        return 143 if terminated else 130
    except Exception as e:  # an fxlens bug: still one line, the traceback on request
        if os.environ.get("FXLENS_DEBUG"):
            raise
        print(
            f"fxlens: internal error: {type(e).__name__}: {e} (FXLENS_DEBUG=1 shows the traceback)",
            file=sys.stderr,
        )
        return 70


if __name__ == "__main__":
    sys.exit(main())
