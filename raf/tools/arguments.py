"""Build a tool's arguments model from a function signature, and describe validation errors.

Example:
    >>> def add(a: int, b: int = 2) -> int:
    ...     return a + b
    >>> spec = arguments_spec(add, "add", {"a": "the first number."})
    >>> spec.schema["properties"]["a"]
    {'description': 'the first number.', 'type': 'integer'}
    >>> spec.schema["required"]
    ['a']
"""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field, PydanticUserError, ValidationError, create_model

from raf.errors import ToolError
from raf.run import RunContext

_UNSUPPORTED_KINDS = {
    inspect.Parameter.VAR_POSITIONAL: "*args",
    inspect.Parameter.VAR_KEYWORD: "**kwargs",
    inspect.Parameter.POSITIONAL_ONLY: "positional-only parameters",
}


@dataclass(frozen=True, slots=True)
class ArgumentsSpec:
    """How a tool's JSON arguments become the keyword arguments of its function."""

    model: type[BaseModel]
    """Validates the arguments object; one field per parameter."""
    fields: tuple[tuple[str, str], ...]
    """(parameter name, model field name) pairs, in signature order."""
    context_param: str | None
    """The parameter that receives the `RunContext`, if the function takes one."""
    schema: dict[str, Any]
    """JSON schema of the arguments object, as the model sees it."""

    def keywords(self, arguments: BaseModel) -> dict[str, Any]:
        """The keyword arguments for the function from validated `arguments`."""
        return {param: getattr(arguments, name) for param, name in self.fields}


def arguments_spec(
    fn: Callable[..., Any], tool_name: str, descriptions: Mapping[str, str]
) -> ArgumentsSpec:
    """The arguments spec of `fn`, with parameter `descriptions` from its docstring.

    A parameter annotated `RunContext` is filled with the calling agent's context and left
    out of the schema.

    Raises:
        ToolError: when a parameter cannot be described (`*args`, `**kwargs`, an unknown type).
    """
    hints = _type_hints(fn)
    definitions: dict[str, Any] = {}
    fields: list[tuple[str, str]] = []
    context_param: str | None = None
    for index, param in enumerate(inspect.signature(fn).parameters.values()):
        if param.kind in _UNSUPPORTED_KINDS:
            raise ToolError(
                f"tool {tool_name!r}: parameter {param.name!r} uses "
                f"{_UNSUPPORTED_KINDS[param.kind]}, which a JSON arguments object cannot fill; "
                "give every parameter a name (and a type)"
            )
        annotation = hints.get(param.name, Any)
        if annotation is RunContext:
            context_param = param.name
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        field_name = f"p{index}"
        definitions[field_name] = (
            annotation,
            Field(default, alias=param.name, description=descriptions.get(param.name)),
        )
        fields.append((param.name, field_name))
    try:
        model = create_model(
            f"{_camel(tool_name)}Arguments",
            __config__=ConfigDict(extra="forbid"),
            **definitions,
        )
        schema = _without_titles(model.model_json_schema())
    except (PydanticUserError, TypeError, NameError) as exc:
        raise ToolError(
            f"tool {tool_name!r}: cannot build a JSON schema from its signature ({exc}); "
            "annotate parameters with JSON-friendly types (str, int, float, bool, lists, "
            "dicts, pydantic models)"
        ) from exc
    return ArgumentsSpec(model, tuple(fields), context_param, schema)


def describe_validation_error(exc: ValidationError) -> str:
    """A short, model-readable account of what was wrong, one `field: problem` per error.

    Example:
        >>> from pydantic import BaseModel, ValidationError
        >>> class Point(BaseModel):
        ...     x: int
        >>> try:
        ...     Point.model_validate_json('{"x": "left"}')
        ... except ValidationError as exc:
        ...     print(describe_validation_error(exc))
        x: Input should be a valid integer, unable to parse string as an integer (got 'left')
    """
    parts: list[str] = []
    for error in exc.errors(include_url=False):
        location = ".".join(str(part) for part in error["loc"]) or "arguments"
        message = error["msg"]
        if error["type"] not in ("missing", "json_invalid", "model_type", "model_attributes_type"):
            message = f"{message} (got {_short(error.get('input'))})"
        parts.append(f"{location}: {message}")
    return "; ".join(parts)


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _type_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    target: Any = fn
    if not (inspect.isfunction(target) or inspect.ismethod(target)):
        target = getattr(fn, "__call__", fn)  # noqa: B004 - callable objects
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception:
        # Unresolvable forward references: fall back to the raw annotations.
        raw: dict[str, Any] = getattr(target, "__annotations__", {})
        return dict(raw)


def _without_titles(schema: dict[str, Any]) -> dict[str, Any]:
    # Titles repeat the property names and cost tokens on every model call.
    schema.pop("title", None)
    properties = cast(dict[str, dict[str, Any]], schema.get("properties", {}))
    for prop in properties.values():
        prop.pop("title", None)
    return schema


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.replace("-", "_").split("_"))


def json_object(tool: str, arguments: str) -> dict[str, Any] | str:
    """`arguments` parsed as a JSON object, or the error text telling the model what is wrong.

    Example:
        >>> json_object("add", '{"a": 1}'), json_object("add", "[1]")
        ({'a': 1}, "invalid arguments for tool 'add': expected a JSON object, got list. Call it again with a JSON object.")
    """
    try:
        parsed: Any = json.loads(arguments or "{}")
    except ValueError as exc:
        return (
            f"invalid arguments for tool {tool!r}: not valid JSON ({exc}). "
            "Call it again with a JSON object."
        )
    if not isinstance(parsed, dict):
        return (
            f"invalid arguments for tool {tool!r}: expected a JSON object, "
            f"got {type(parsed).__name__}. Call it again with a JSON object."
        )
    return cast(dict[str, Any], parsed)
