"""JSON with type tags for the values a workflow run checkpoints (no pickle).

Each value becomes `{"t": tag, "v": data}`: `json` (plain JSON), `message` (a `ChatMessage`),
`messages` (a list of them), `response` (an `AgentResponse`), `model` (any pydantic model whose
class can be imported, with `"cls": "module:QualName"`), and `list` / `tuple` / `dict` holding
tagged values. Anything else raises `CheckpointValueError` naming where it was found.

Example:
    >>> from raf.messages import ChatMessage
    >>> decode(encode([ChatMessage.user("hi")], "input")) == [ChatMessage.user("hi")]
    True
"""

from __future__ import annotations

import importlib
from typing import Any, cast

from pydantic import BaseModel

from raf.messages import ChatMessage
from raf.updates import AgentResponse, Usage

__all__ = ["CheckpointValueError", "decode", "encode"]


class CheckpointValueError(TypeError):
    """A value a run must checkpoint is not serializable; `node_id` names the node it belongs to."""

    def __init__(self, message: str, *, node_id: str | None = None) -> None:
        super().__init__(message)
        self.node_id = node_id


def encode(value: Any, where: str, node_id: str | None = None) -> dict[str, Any]:
    """`value` as tagged JSON; `where` and `node_id` name it in the error.

    Raises:
        CheckpointValueError: when `value` (or a part of it) has no JSON form.
    """
    if value is None or type(value) in (str, int, bool) or _is_json(value):
        return {"t": "json", "v": value}
    if isinstance(value, ChatMessage):
        return {"t": "message", "v": value.model_dump(mode="json")}
    if isinstance(value, AgentResponse):
        return {
            "t": "response",
            "v": {
                "messages": [m.model_dump(mode="json") for m in value.messages],
                "usage": [value.usage.input_tokens, value.usage.output_tokens],
                "value": encode(value.value, where, node_id),
            },
        }
    if isinstance(value, BaseModel):
        return {
            "t": "model",
            "cls": _class_path(value, where, node_id),
            "v": value.model_dump(mode="json"),
        }
    if isinstance(value, list):
        items = cast(list[Any], value)
        if items and all(isinstance(m, ChatMessage) for m in items):
            return {"t": "messages", "v": [m.model_dump(mode="json") for m in items]}
        if _is_json(items):
            return {"t": "json", "v": items}
        return {"t": "list", "v": [encode(item, where, node_id) for item in items]}
    if isinstance(value, tuple):
        return {
            "t": "tuple",
            "v": [encode(item, where, node_id) for item in cast(tuple[Any, ...], value)],
        }
    if isinstance(value, dict):
        mapping = cast(dict[Any, Any], value)
        if _is_json(mapping):
            return {"t": "json", "v": mapping}
        if all(type(k) is str for k in mapping):
            return {"t": "dict", "v": {k: encode(v, where, node_id) for k, v in mapping.items()}}
    raise _refuse(value, where, node_id)


def decode(data: dict[str, Any]) -> Any:
    """The value `encode` turned into `data`.

    Raises:
        ValueError: when `data` is not tagged JSON written by `encode`.
    """
    tag = data.get("t")
    body: Any = data.get("v")
    if tag == "json":
        return body
    if tag == "message":
        return ChatMessage.model_validate(body)
    if tag == "messages":
        return [ChatMessage.model_validate(m) for m in body]
    if tag == "response":
        input_tokens, output_tokens = body["usage"]
        return AgentResponse(
            messages=[ChatMessage.model_validate(m) for m in body["messages"]],
            usage=Usage(input_tokens=input_tokens, output_tokens=output_tokens),
            value=decode(body["value"]),
        )
    if tag == "model":
        return _import_model(str(data.get("cls"))).model_validate(body)
    if tag == "list":
        return [decode(item) for item in body]
    if tag == "tuple":
        return tuple(decode(item) for item in body)
    if tag == "dict":
        return {k: decode(v) for k, v in cast(dict[str, Any], body).items()}
    raise ValueError(f"not a checkpointed value (unknown tag {tag!r}); was it written by raf?")


def _is_json(value: Any) -> bool:
    kind: Any = value.__class__
    if value is None or kind in (str, int, bool):
        return True
    if kind is float:
        return value == value and value not in (float("inf"), float("-inf"))
    if kind is list:
        return all(_is_json(item) for item in cast(list[Any], value))
    if kind is dict:
        return all(type(k) is str and _is_json(v) for k, v in cast(dict[Any, Any], value).items())
    return False


def _class_path(model: BaseModel, where: str, node_id: str | None) -> str:
    cls = type(model)
    if "<locals>" in cls.__qualname__:
        raise CheckpointValueError(
            f"cannot checkpoint {where}: {cls.__qualname__} is defined inside a function; "
            "define pydantic models sent through a workflow at module level so they can be imported",
            node_id=node_id,
        )
    return f"{cls.__module__}:{cls.__qualname__}"


def _import_model(path: str) -> type[BaseModel]:
    module_name, _, qualname = path.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    if not (isinstance(target, type) and issubclass(target, BaseModel)):
        raise ValueError(f"checkpointed model class {path!r} is not a pydantic model")
    return target


def _refuse(value: Any, where: str, node_id: str | None) -> CheckpointValueError:
    return CheckpointValueError(
        f"cannot checkpoint {where}: a {type(value).__name__} is not JSON, a ChatMessage, an "
        "AgentResponse or an importable pydantic model; send values of those kinds",
        node_id=node_id,
    )
