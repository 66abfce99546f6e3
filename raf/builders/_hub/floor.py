"""`Floor`: the one message a hub's coordinator and its members pass to one another.

It carries the shared conversation, where the run's input ends in it, the members that spoke
this run (in order), and where the last one's messages start. Checkpoints
written before the hub held each pattern's own shape (a handoff's `(start, conversation,
trail)`, a group chat's `(start, transcript, rounds, speaker, said)`, a Magentic member's
message list or `AgentResponse`); `legacy_floor` reads them as floors, so such a checkpoint
resumes.

Example:
    >>> from raf.messages import ChatMessage
    >>> floor = Floor(conversation=[ChatMessage.user("hi")], start=1)
    >>> after = floor.after("a", [ChatMessage.assistant("hello", author="a")])
    >>> [m.text for m in after.added], [m.text for m in after.said_last], after.trail
    (['hello'], ['hello'], ['a'])
"""

from __future__ import annotations

from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from raf._defaults import new_list
from raf._trusted import trusted
from raf.messages import ChatMessage
from raf.updates import AgentResponse

__all__ = ["Floor", "floor", "legacy_floor"]


class Floor(BaseModel):
    """What travels between a hub's coordinator and its members during one run."""

    model_config = ConfigDict(frozen=True)

    type: Literal["floor"] = "floor"
    """The tag."""
    conversation: list[ChatMessage]
    """The shared conversation so far (the run's input first)."""
    start: int = 0
    """Where the run's input ends in `conversation` (the run's response follows it)."""
    trail: list[str] = Field(default_factory=new_list)
    """The members that spoke this run, in order (the last speaker last)."""
    said: int = -1
    """Where the last member's messages start in `conversation` (-1: no member spoke yet)."""

    @property
    def added(self) -> list[ChatMessage]:
        """What this run added to the conversation."""
        return self.conversation[self.start :]

    @property
    def said_last(self) -> list[ChatMessage]:
        """The last member's messages (none before a member spoke)."""
        return self.conversation[self.said :] if self.said >= 0 else []

    def after(self, member: str, messages: list[ChatMessage]) -> Floor:
        """This floor after `member` said `messages`."""
        conversation = self.conversation
        trail = [*self.trail, member]
        return floor([*conversation, *messages], self.start, trail, len(conversation))


def floor(conversation: list[ChatMessage], start: int, trail: list[str], said: int = -1) -> Floor:
    """`Floor(conversation=..., start=..., trail=..., said=...)` from parts the hub made and
    checked itself (no validation again: a floor is built once per member turn)."""
    values = {
        "type": "floor",
        "conversation": conversation,
        "start": start,
        "trail": trail,
        "said": said,
    }
    return trusted(Floor, values, {"conversation", "start", "trail", "said"})


def legacy_floor(message: Any, *, to_member: bool) -> Floor | None:
    """The floor a message of a checkpoint written before the hub stands for, or None.

    Args:
        message: a pending or suspended message of such a checkpoint.
        to_member: whether a member receives it (else the coordinator).
    """
    if isinstance(message, AgentResponse):
        # A Magentic member's answer: its messages are what it said.
        return floor(list(cast("AgentResponse[Any]", message).messages), 0, [], 0)
    if not isinstance(message, tuple):
        return None
    fields = cast("tuple[Any, ...]", message)
    if len(fields) == 3:
        # A handoff turn: (start, conversation, trail), the trail ending in its addressee.
        start, conversation, trail = fields
        return floor(list(conversation), start, list(trail[:-1] if to_member else trail))
    if len(fields) == 5:
        # A group-chat round: (start, transcript, rounds, speaker, said); earlier speakers
        # are not known, only how many spoke and who spoke last.
        start, transcript, rounds, speaker, said = fields
        trail = [*([""] * (rounds - 1)), speaker] if rounds else []
        return floor(list(transcript), start, trail, said)
    return None
