from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field, ValidationError

from raf.errors import ToolError
from raf.run import RunContext
from raf.tools.arguments import arguments_spec, describe_validation_error


class Address(BaseModel):
    street: str
    number: int


def test_schema_from_signature_types_defaults_and_descriptions() -> None:
    def book(
        city: str,
        nights: Annotated[int, Field(ge=1)],
        tags: list[str] | None = None,
        room: Literal["single", "double"] = "double",
    ) -> str:
        return city

    spec = arguments_spec(book, "book", {"city": "where to stay.", "nights": "how long."})
    schema = spec.schema
    assert schema["type"] == "object"
    assert schema["required"] == ["city", "nights"]
    assert schema["additionalProperties"] is False
    props = schema["properties"]
    assert props["city"] == {"description": "where to stay.", "type": "string"}
    assert props["nights"] == {"description": "how long.", "minimum": 1, "type": "integer"}
    assert props["room"]["enum"] == ["single", "double"]
    assert props["room"]["default"] == "double"
    assert props["tags"]["default"] is None
    assert "title" not in schema
    assert all("title" not in p for p in props.values())


def test_nested_models_go_to_defs() -> None:
    def ship(to: Address) -> None: ...

    schema = arguments_spec(ship, "ship", {}).schema
    assert schema["properties"]["to"] == {"$ref": "#/$defs/Address"}
    assert set(schema["$defs"]["Address"]["properties"]) == {"street", "number"}


def test_parameter_names_that_clash_with_model_attributes() -> None:
    def render(json: str, schema: int = 1, copy: bool = False) -> str:
        return json

    spec = arguments_spec(render, "render", {})
    assert list(spec.schema["properties"]) == ["json", "schema", "copy"]
    validated = spec.model.model_validate_json('{"json": "x", "schema": 2}')
    assert spec.keywords(validated) == {"json": "x", "schema": 2, "copy": False}


def test_unannotated_parameters_accept_anything() -> None:
    def echo(value, other: Any = None):  # type: ignore[no-untyped-def]
        return value

    spec = arguments_spec(echo, "echo", {})
    assert spec.schema["required"] == ["value"]
    validated = spec.model.model_validate_json('{"value": [1, {"a": 2}]}')
    assert spec.keywords(validated)["value"] == [1, {"a": 2}]


def test_run_context_parameter_is_left_out_of_the_schema() -> None:
    def whoami(ctx: RunContext, loud: bool = False) -> str:
        return "/".join(ctx.path)

    spec = arguments_spec(whoami, "whoami", {})
    assert spec.context_param == "ctx"
    assert list(spec.schema["properties"]) == ["loud"]


@pytest.mark.parametrize(
    ("source", "what"),
    [
        ("def f(*items: int) -> None: ...", "*args"),
        ("def f(**options: int) -> None: ...", "**kwargs"),
        ("def f(a: int, /) -> None: ...", "positional-only"),
    ],
)
def test_unsupported_parameter_kinds_are_refused(source: str, what: str) -> None:
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    with pytest.raises(ToolError, match=r"tool 'f'.*") as info:
        arguments_spec(namespace["f"], "f", {})
    assert what in str(info.value)


def test_describe_validation_error_names_each_field() -> None:
    def book(city: str, nights: int) -> None: ...

    model = arguments_spec(book, "book", {}).model
    with pytest.raises(ValidationError) as info:
        model.model_validate_json('{"nights": "many", "extra": 1}')
    text = describe_validation_error(info.value)
    assert "city: Field required" in text
    assert "nights: Input should be a valid integer" in text
    assert "(got 'many')" in text
    assert "extra: Extra inputs are not permitted" in text


def test_describe_validation_error_on_malformed_json() -> None:
    def book(city: str) -> None: ...

    model = arguments_spec(book, "book", {}).model
    with pytest.raises(ValidationError) as info:
        model.model_validate_json('{"city": ')
    assert describe_validation_error(info.value).startswith("arguments: Invalid JSON")
