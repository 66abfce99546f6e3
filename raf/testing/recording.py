"""Record the model traffic of a whole agent tree, then replay it offline.

Wrap the providers of a tree with `Recording.record(provider)` and run it once against a real
endpoint; `recording.save(path)`. Later, `Recording.load(path).replay()` is a `ScriptedProvider`
answering each request with the turn recorded for the same conversation and tools, so the tree
reruns offline, deterministically, with the same tool call ids, even when concurrent branches call
the model in another order. Agents that send identical requests (same instructions, same
conversation) are told apart by name: `record(provider, name="style")` and
`replay(name="style")`.

Example:
    >>> import anyio
    >>> from raf import ReactAgent
    >>> from raf.testing import ScriptedProvider, text
    >>> recording = Recording()
    >>> live = recording.record(ScriptedProvider([text("recorded answer")]))
    >>> _ = anyio.run(ReactAgent("a", live, "Be brief.").run("hi").collect)
    >>> anyio.run(ReactAgent("a", recording.replay(), "Be brief.").run("hi").collect).text
    'recorded answer'
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

from raf.errors import ScriptExhausted
from raf.messages import ChatMessage, message_list_adapter
from raf.providers.base import Completion, LlmProvider, ProviderEvent
from raf.testing.script import ScriptedCall, Turn
from raf.testing.scripted_provider import ScriptedProvider
from raf.tools.definition import ToolDefinition

RECORDING_FORMAT_VERSION = 2


def request_key(messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition] = ()) -> str:
    """A digest of a request's conversation and tools: replay finds turns by it."""
    digest = hashlib.sha256(message_list_adapter.dump_json(list(messages)))
    for definition in tools:
        digest.update(json.dumps([definition.name, definition.parameters]).encode())
    return digest.hexdigest()


class Recording:
    """Turns recorded by provider name and request; repeated requests replay in request order."""

    def __init__(self) -> None:
        self._turns: dict[str, dict[str, list[Turn | None]]] = {}

    def __len__(self) -> int:
        return sum(
            turn is not None
            for by_key in self._turns.values()
            for ts in by_key.values()
            for turn in ts
        )

    def add(
        self,
        messages: Sequence[ChatMessage],
        turn: Turn,
        *,
        tools: Sequence[ToolDefinition] = (),
        name: str = "",
    ) -> None:
        """Record `turn` as the answer to `messages` (with `tools`) for the provider `name`."""
        self._slots(name, request_key(messages, tools)).append(turn)

    def record(self, provider: LlmProvider, *, name: str = "") -> LlmProvider:
        """`provider`, recording every completed call into this recording under `name`.

        A call takes its place when it is made, so identical requests replay in the order
        they were made, whatever order they finished in.
        """
        return _RecordingProvider(provider, functools.partial(self._slots, name))

    def replay(self, *, name: str = "", model: str = "replay") -> ScriptedProvider:
        """A provider answering from what was recorded under `name`.

        Raises (from the provider): `ScriptExhausted` naming the request when it was never
        recorded, or was asked more often than recorded.
        """
        served: dict[str, int] = {}
        by_key = self._turns.get(name, {})

        def answer(messages: list[ChatMessage]) -> Turn:
            # The provider logs each request (with its tools) just before asking for its turn.
            key = request_key(messages, provider.requests[-1].tools)
            turns = [turn for turn in by_key.get(key, ()) if turn is not None]
            index = served.get(key, 0)
            if index >= len(turns):
                last = messages[-1].text[:60] if messages else ""
                where = f" of {name!r}" if name else ""
                raise ScriptExhausted(
                    f"no recorded answer #{index + 1}{where} for a request ending {last!r} "
                    f"(key {key[:12]}); record the run again"
                )
            served[key] = index + 1
            return turns[index]

        provider = ScriptedProvider(answer, model=model)
        return provider

    def _slots(self, name: str, key: str) -> list[Turn | None]:
        return self._turns.setdefault(name, {}).setdefault(key, [])

    def to_json(self) -> str:
        """The recording as versioned JSON."""
        turns = {
            name: {
                key: [_turn_to_json(t) for t in ts if t is not None] for key, ts in by_key.items()
            }
            for name, by_key in self._turns.items()
        }
        return json.dumps({"version": RECORDING_FORMAT_VERSION, "turns": turns}, indent=1)

    @classmethod
    def from_json(cls, text: str) -> Recording:
        """Read a recording written by `to_json`.

        Raises:
            ValueError: when `text` is not a recording of a known version.
        """
        data: Any = json.loads(text)
        fields = cast(dict[str, Any], data) if isinstance(data, dict) else {}
        if fields.get("version") != RECORDING_FORMAT_VERSION:
            raise ValueError(
                f"not a raf recording of version {RECORDING_FORMAT_VERSION}; "
                "record it again with Recording.record"
            )
        recording = cls()
        named = cast(dict[str, dict[str, list[dict[str, Any]]]], fields["turns"])
        for name, by_key in named.items():
            for key, items in by_key.items():
                recording._slots(name, key).extend(_turn_from_json(item) for item in items)
        return recording

    def save(self, path: str | Path) -> None:
        """Write the recording to `path`."""
        Path(path).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Recording:
        """Read a recording from `path`."""
        return cls.from_json(Path(path).read_text(encoding="utf-8"))


class _RecordingProvider:
    """Passes every event through and records the completed call in the slot it reserved."""

    def __init__(self, inner: LlmProvider, slots_for: Callable[[str], list[Turn | None]]) -> None:
        self._inner = inner
        self._slots_for = slots_for

    @property
    def model(self) -> str:
        return self._inner.model

    @asynccontextmanager
    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolDefinition] = (),
        response_format: dict[str, Any] | None = None,
    ) -> AsyncGenerator[AsyncIterator[ProviderEvent]]:
        request = list(messages)
        slots = self._slots_for(request_key(request, tools))
        slot = len(slots)
        slots.append(None)  # a call that never completes leaves an empty slot, skipped later
        async with self._inner.stream(
            request, tools=tools, response_format=response_format
        ) as events:
            tap = self._tap(events, slots, slot)
            try:
                yield tap
            finally:
                await tap.aclose()

    async def _tap(
        self, events: AsyncIterator[ProviderEvent], slots: list[Turn | None], slot: int
    ) -> AsyncGenerator[ProviderEvent]:
        async for event in events:
            if isinstance(event, Completion):
                slots[slot] = _turn_of(event)
            yield event


def _turn_of(completion: Completion) -> Turn:
    calls = tuple(ScriptedCall(c.name, c.arguments, c.call_id) for c in completion.tool_calls)
    return Turn(
        "tool_calls" if calls else "text",
        text=completion.text,
        reasoning=completion.reasoning or None,
        calls=calls,
        usage=(completion.input_tokens, completion.output_tokens),
    )


def _turn_to_json(turn: Turn) -> dict[str, Any]:
    return {
        "kind": turn.kind,
        "text": turn.text,
        "reasoning": turn.reasoning,
        "calls": [[c.name, c.arguments, c.call_id] for c in turn.calls],
        "usage": list(turn.usage) if turn.usage is not None else None,
    }


def _turn_from_json(data: dict[str, Any]) -> Turn:
    usage = data.get("usage")
    return Turn(
        data["kind"],
        text=data.get("text", ""),
        reasoning=data.get("reasoning"),
        calls=tuple(ScriptedCall(name, args, call_id) for name, args, call_id in data["calls"]),
        usage=(int(usage[0]), int(usage[1])) if usage else None,
    )
