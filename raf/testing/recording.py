"""Record the model traffic of a whole agent tree, then replay it offline.

Wrap the providers of a tree with `Recording.record(provider)` and run it once against a real
endpoint; `recording.save(path)`. Later, `Recording.load(path).replay()` is a `ScriptedProvider`
answering each request with the turn recorded for the same conversation, so the tree reruns
offline, deterministically, with the same tool call ids, even when concurrent branches call the
model in another order.

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

import hashlib
import json
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

from raf.messages import ChatMessage, message_list_adapter
from raf.providers.base import Completion, LlmProvider, ProviderEvent
from raf.testing.script import ScriptedCall, ScriptExhausted, Turn
from raf.testing.scripted_provider import ScriptedProvider
from raf.tools.definition import ToolDefinition

RECORDING_FORMAT_VERSION = 1


def request_key(messages: Sequence[ChatMessage]) -> str:
    """A digest of a request's conversation: replay finds turns by it."""
    data = message_list_adapter.dump_json(list(messages))
    return hashlib.sha256(data).hexdigest()


class Recording:
    """Turns recorded by request; several answers to the same request replay in order."""

    def __init__(self) -> None:
        self._turns: dict[str, list[Turn]] = {}

    def __len__(self) -> int:
        return sum(len(turns) for turns in self._turns.values())

    def add(self, messages: Sequence[ChatMessage], turn: Turn) -> None:
        """Record `turn` as the answer to `messages`."""
        self._turns.setdefault(request_key(messages), []).append(turn)

    def record(self, provider: LlmProvider) -> LlmProvider:
        """`provider`, recording every completed call into this recording."""
        return _RecordingProvider(provider, self)

    def replay(self, *, model: str = "replay") -> ScriptedProvider:
        """A provider answering from the recording.

        Raises (from the provider): `ScriptExhausted` naming the request when it was never
        recorded, or was asked more often than recorded.
        """
        served: dict[str, int] = {}

        def answer(messages: list[ChatMessage]) -> Turn:
            key = request_key(messages)
            turns = self._turns.get(key, [])
            index = served.get(key, 0)
            if index >= len(turns):
                last = messages[-1].text[:60] if messages else ""
                raise ScriptExhausted(
                    f"no recorded answer #{index + 1} for a request ending {last!r} "
                    f"(key {key[:12]}); record the run again"
                )
            served[key] = index + 1
            return turns[index]

        return ScriptedProvider(answer, model=model)

    def to_json(self) -> str:
        """The recording as versioned JSON."""
        return json.dumps(
            {
                "version": RECORDING_FORMAT_VERSION,
                "turns": {k: [_turn_to_json(t) for t in ts] for k, ts in self._turns.items()},
            },
            indent=1,
        )

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
        turns = cast(dict[str, list[dict[str, Any]]], fields["turns"])
        for key, items in turns.items():
            recording._turns[key] = [_turn_from_json(item) for item in items]
        return recording

    def save(self, path: str | Path) -> None:
        """Write the recording to `path`."""
        Path(path).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Recording:
        """Read a recording from `path`."""
        return cls.from_json(Path(path).read_text(encoding="utf-8"))


class _RecordingProvider:
    """Passes every event through and records the completed call."""

    def __init__(self, inner: LlmProvider, recording: Recording) -> None:
        self._inner = inner
        self._recording = recording

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
        async with self._inner.stream(
            request, tools=tools, response_format=response_format
        ) as events:
            tap = self._tap(request, events)
            try:
                yield tap
            finally:
                await tap.aclose()

    async def _tap(
        self, request: list[ChatMessage], events: AsyncIterator[ProviderEvent]
    ) -> AsyncGenerator[ProviderEvent]:
        async for event in events:
            if isinstance(event, Completion):
                self._recording.add(request, _turn_of(event))
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
