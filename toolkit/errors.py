"""The one error type the CLI turns into a one-line message and a non-zero exit."""


class FxlensError(Exception):
    """Bad input or an outcome the user must act on; `str(e)` is the whole message, one line."""

    exit_code = 2
