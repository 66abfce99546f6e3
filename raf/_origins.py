"""`MessageOrigins`: which agent of a run completed each message, so a response can say who
said what (`AgentResponse.paths`, `AgentResponse.answers`).

Example:
    >>> import anyio
    >>> from raf.messages import ChatMessage
    >>> from raf.updates import AgentResponse, MessageCompleted
    >>> said = ChatMessage.assistant("Looks good.", author="review")
    >>> origins = MessageOrigins()
    >>> async def discard(update): pass
    >>> emit = origins.watching(discard)
    >>> anyio.run(emit, MessageCompleted(message=said, path=("team", "review")))
    >>> origins.attributed(AgentResponse(messages=[said])).paths
    [('team', 'review')]
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from raf._trusted import with_paths
from raf.messages import ChatMessage
from raf.updates import AgentPath, AgentResponse, AgentUpdate

ResponseT = TypeVar("ResponseT", bound="AgentResponse[Any]")


class MessageOrigins:
    """Remembers the path of every `MessageCompleted` a run streams, by message identity."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        # id() -> (the message, kept so its id cannot be reused, and its path)
        self._seen: dict[int, tuple[ChatMessage, AgentPath]] = {}

    def watching(
        self, emit: Callable[[AgentUpdate], Awaitable[None]]
    ) -> Callable[[AgentUpdate], Awaitable[None]]:
        """`emit`, noting the path of each completed message on the way."""
        seen = self._seen

        def watch(update: AgentUpdate) -> Awaitable[None]:
            # No coroutine of its own: the caller awaits `emit`'s (one frame less per update).
            if update.type == "message_completed":
                seen[id(update.message)] = (update.message, update.path)
            return emit(update)

        return watch

    def attributed(self, response: ResponseT) -> ResponseT:
        """`response` with `paths` set: each message's path, `()` where none was seen."""
        seen = self._seen
        paths: list[AgentPath] = []
        for message in response.messages:
            entry = seen.get(id(message))
            paths.append(entry[1] if entry is not None and entry[0] is message else ())
        return with_paths(response, paths)
