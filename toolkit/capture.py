"""Placeholder: filled by its own issue."""

from fxlens.errors import FxlensError


def add_arguments(parser):
    pass


def main(args):
    raise FxlensError("not built yet")
