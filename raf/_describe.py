"""How error messages show a value that was passed where something else belongs."""

from __future__ import annotations

LIMIT = 60
"""Characters of a value's repr an error message shows."""


def describe(value: object) -> str:
    """`value` for an error message: its type and a short repr, or the class it is.

    Example:
        >>> describe("hello"), describe(None), describe(int)
        ("the str 'hello'", 'None', 'the class int')
    """
    if value is None:
        return "None"
    if isinstance(value, type):
        return f"the class {value.__name__}"
    return f"the {type(value).__name__} {short_repr(value)}"


def short_repr(value: object) -> str:
    """`repr(value)`, cut to `LIMIT` characters.

    Example:
        >>> short_repr("x" * 100)[-6:]
        'xxx...'
    """
    shown = repr(value)
    return shown if len(shown) <= LIMIT else shown[: LIMIT - 3] + "..."
