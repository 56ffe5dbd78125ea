"""`fxlens diff A B`: what is new, gone, moved or changed between two sessions or traces.

`compare` (pure, over two report dicts) builds the diff; `render` prints it; `command` is the CLI.
Reads `fxlens.trace` and `fxlens.report` only.
"""
