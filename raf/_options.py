"""`Options`: the base of raf's option objects, which refuse a misspelt field where it is given.

Example:
    >>> from raf import RunOptions
    >>> RunOptions(timout=5)
    Traceback (most recent call last):
    ...
    TypeError: RunOptions() got an unknown field 'timout'; did you mean 'timeout'? ...
"""

from __future__ import annotations

from typing import cast

from pydantic import BaseModel, ConfigDict, model_validator


class Options(BaseModel):
    """A frozen pydantic model whose unknown fields raise `TypeError`, naming the field and the
    closest valid one (a `RunOptions(timout=5)` would otherwise mean no timeout)."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _refuse_unknown_fields(cls, data: object) -> object:
        if isinstance(data, dict):
            fields = cls.model_fields
            for name in cast("dict[object, object]", data):
                if name not in fields:
                    raise TypeError(unknown_field(cls.__name__, name, list(fields)))
        return cast(object, data)


def unknown_field(owner: str, name: object, known: list[str]) -> str:
    """The message for the unknown field `name` given to `owner`, whose fields are `known`."""
    import difflib  # only for this message: not loaded by `import raf`

    close = difflib.get_close_matches(str(name), known, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"{owner}() got an unknown field {name!r}; {hint}its fields are: {', '.join(known)}"
