"""JSON with type tags for the values a workflow run checkpoints (no pickle).

Each value becomes `{"t": tag, "v": data}`: `json` (plain JSON), `message` (a `ChatMessage`),
`messages` (a list of them), `response` (an `AgentResponse`), `model` (a pydantic model defined
at module level, with `"cls": "module:QualName"`), `datetime` / `date` (ISO text), `uuid`, and
`list` / `tuple` / `set` / `frozenset` / `dict` (string keys) / `map` (`[key, value]` pairs, any
keys) holding tagged values. Anything else raises `CheckpointValueError` naming where it was
found.

Decoding never imports what a checkpoint names: a `model` comes back as its class only when
that class is known here — encoded by this process, declared by a workflow's nodes and agents
(`Workflow` registers them when built), or added with `register_model`; any other comes back as
its plain JSON data. A checkpoint written before a module of raf's moved names the class where
it stood then, and finds it where it stands now (`_MOVED`).

Example:
    >>> from raf.messages import ChatMessage
    >>> decode(encode([ChatMessage.user("hi")], "input")) == [ChatMessage.user("hi")]
    True
"""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Any, cast

from pydantic import BaseModel

from raf.errors import CheckpointValueError
from raf.messages import ChatMessage
from raf.providers._unicode import valid_data, valid_unicode
from raf.updates import AgentResponse, RequestInfoUpdate, Usage

__all__ = ["decode", "encode", "register_model"]

_MODELS: dict[str, type[BaseModel]] = {}
"""The model classes checkpoints may name, by `"module:QualName"` (see the module docstring)."""

_MOVED: dict[str, str] = {
    "raf.builders.group_chat": "raf.builders.group_chat.builder",
    "raf.builders.group_chat_selectors": "raf.builders.group_chat.selectors",
    "raf.builders.group_chat_termination": "raf.builders.group_chat.termination",
    "raf.builders.handoff": "raf.builders.handoff.builder",
    "raf.builders.magentic": "raf.builders.magentic.builder",
    "raf.builders.magentic_ledger": "raf.builders.magentic.ledger",
    "raf.builders.magentic_manager": "raf.builders.magentic.manager",
    "raf.builders.magentic_review": "raf.builders.magentic.review",
    "raf.builders.roles": "raf.builders.roles.builder",
    "raf.builders.roles_events": "raf.builders.roles.events",
    "raf.builders.roles_nodes": "raf.builders.roles.nodes",
    "raf.builders.roles_program": "raf.builders.roles.program",
    "raf.builders.roles_ticks": "raf.builders.roles.ticks",
    "raf.builders.vote": "raf.builders.vote.builder",
    "raf.builders.vote_ballot": "raf.builders.vote.ballot",
    "raf.builders.vote_judge": "raf.builders.vote.judging",
    "raf.builders.vote_policy": "raf.builders.vote.policy",
}
"""Where the modules of raf that checkpoints may name moved, by their old names: each pattern's
modules went into its own package (`raf.builders.vote_ballot` is `raf.builders.vote.ballot`)."""


def register_model(cls: type[BaseModel]) -> type[BaseModel]:
    """Let checkpoints bring `cls` back as itself (usable as a class decorator).

    Decoding never imports a module a checkpoint names; a model class that neither this
    process encoded nor a workflow declared must be registered to come back as a model.

    Example:
        >>> from pydantic import BaseModel
        >>> @register_model
        ... class Verdict(BaseModel):
        ...     ok: bool
        >>> decode({"t": "model", "cls": f"{__name__}:Verdict", "v": {"ok": True}})
        Verdict(ok=True)
    """
    if not (isinstance(cls, type) and issubclass(cls, BaseModel)):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError(f"register_model takes a pydantic model class, got {cls!r}")
    _MODELS[f"{cls.__module__}:{cls.__qualname__}"] = cls
    return cls


def encode(value: Any, where: str, node_id: str | None = None) -> dict[str, Any]:
    """`value` as tagged JSON; `where` and `node_id` name it in the error.

    Raises:
        CheckpointValueError: when `value` (or a part of it) has no JSON form.
    """
    if value is None or type(value) in (int, bool):
        return {"t": "json", "v": value}
    if type(value) is str:
        # Text from outside (a run's input, a node's state) may hold a lone surrogate, which
        # no store can write: it becomes U+FFFD, as in messages and model text.
        return {"t": "json", "v": valid_unicode(value)}
    if _is_json(value):
        return {"t": "json", "v": valid_data(value)}
    if isinstance(value, ChatMessage):
        return {"t": "message", "v": value.model_dump(mode="json")}
    if isinstance(value, AgentResponse):
        response = cast("AgentResponse[Any]", value)
        fields: dict[str, Any] = {
            "messages": [m.model_dump(mode="json") for m in response.messages],
            "usage": [response.usage.input_tokens, response.usage.output_tokens],
            "value": encode(response.value, where, node_id),
        }
        if response.status != "completed":  # a completed response's form is unchanged
            fields["status"] = response.status
            fields["pending"] = [
                [r.request_id, list(r.path), encode(r.payload, where, node_id)]
                for r in response.pending
            ]
        return {"t": "response", "v": fields}
    if isinstance(value, BaseModel):
        return {
            "t": "model",
            "cls": _class_path(value, where, node_id),
            "v": valid_data(value.model_dump(mode="json")),
        }
    if isinstance(value, list):
        items = cast(list[Any], value)
        if items and all(isinstance(m, ChatMessage) for m in items):
            return {"t": "messages", "v": [m.model_dump(mode="json") for m in items]}
        if _is_json(items):
            return {"t": "json", "v": valid_data(items)}
        return {"t": "list", "v": [encode(item, where, node_id) for item in items]}
    if isinstance(value, tuple):
        return {
            "t": "tuple",
            "v": [encode(item, where, node_id) for item in cast(tuple[Any, ...], value)],
        }
    if isinstance(value, dict):
        mapping = cast(dict[Any, Any], value)
        if _is_json(mapping):
            return {"t": "json", "v": valid_data(mapping)}
        if all(type(k) is str for k in mapping):
            return {
                "t": "dict",
                "v": {valid_unicode(k): encode(v, where, node_id) for k, v in mapping.items()},
            }
        return {
            "t": "map",
            "v": [
                [encode(k, where, node_id), encode(v, where, node_id)] for k, v in mapping.items()
            ],
        }
    if isinstance(value, set | frozenset):
        items = cast(set[Any] | frozenset[Any], value)
        tag = "set" if isinstance(items, set) else "frozenset"
        return {"t": tag, "v": [encode(item, where, node_id) for item in _ordered(items)]}
    if isinstance(value, datetime):
        return {"t": "datetime", "v": value.isoformat()}
    if isinstance(value, date):
        return {"t": "date", "v": value.isoformat()}
    if isinstance(value, uuid.UUID):
        return {"t": "uuid", "v": str(value)}
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
            status=body.get("status", "completed"),
            pending=[
                RequestInfoUpdate(request_id=request_id, path=tuple(path), payload=decode(payload))
                for request_id, path, payload in body.get("pending", ())
            ],
        )
    if tag == "model":
        cls = _model_class(str(data.get("cls")))
        return body if cls is None else cls.model_validate(body)
    if tag == "list":
        return [decode(item) for item in body]
    if tag == "tuple":
        return tuple(decode(item) for item in body)
    if tag == "dict":
        return {k: decode(v) for k, v in cast(dict[str, Any], body).items()}
    if tag == "map":
        return {decode(k): decode(v) for k, v in body}
    if tag == "set":
        return {decode(item) for item in body}
    if tag == "frozenset":
        return frozenset(decode(item) for item in body)
    if tag == "datetime":
        return datetime.fromisoformat(body)
    if tag == "date":
        return date.fromisoformat(body)
    if tag == "uuid":
        return uuid.UUID(body)
    raise ValueError(f"not a checkpointed value (unknown tag {tag!r}); was it written by raf?")


def _model_class(path: str) -> type[BaseModel] | None:
    """The known class `path` names, where it stands now if its module moved since."""
    cls = _MODELS.get(path)
    if cls is None:
        module, _, name = path.partition(":")
        moved = _MOVED.get(module)
        if moved is not None:
            cls = _MODELS.get(f"{moved}:{name}")
    return cls


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


def _ordered(items: set[Any] | frozenset[Any]) -> list[Any]:
    # Sorted when the items compare, so the same set always checkpoints as the same JSON.
    try:
        return sorted(items)
    except TypeError:
        return list(items)


def _class_path(model: BaseModel, where: str, node_id: str | None) -> str:
    cls = type(model)
    if "<locals>" in cls.__qualname__:
        raise CheckpointValueError(
            f"cannot checkpoint {where}: {cls.__qualname__} is defined inside a function; "
            "define pydantic models sent through a workflow at module level",
            node_id=node_id,
        )
    path = f"{cls.__module__}:{cls.__qualname__}"
    _MODELS.setdefault(path, cls)
    return path


def _refuse(value: Any, where: str, node_id: str | None) -> CheckpointValueError:
    return CheckpointValueError(
        f"cannot checkpoint {where}: a value of type {type(value).__name__} is not JSON, a ChatMessage, an "
        "AgentResponse, a module-level pydantic model, a date, datetime or UUID, or a list, "
        "tuple, set or dict of those; use values of those kinds",
        node_id=node_id,
    )
