"""How a conversation is shown to one agent's model: from that agent's own seat.

Only the agent's own earlier messages go out as `assistant` messages. Another agent's message
becomes a `user` message naming its author (its `author`, which the chat format sends as the
participant `name`, and a leading `[author]` line); its tool calls and their results are
summarised in that message. The agent's instructions, with any other system text, are the one
system message, first. A tool result whose call is not in this agent's own preceding assistant
message (a human's typed answer to a request, say) goes out as user text, never as an orphan
`tool` message. The session history is never changed: this is only what a request carries.

Messages without an author count as the agent's own (a conversation a caller wrote by hand).

Example:
    >>> conversation = [
    ...     ChatMessage.user("Write a haiku."),
    ...     ChatMessage.assistant("Old pond, a frog.", author="poet"),
    ... ]
    >>> [(m.role, m.author, m.text) for m in seen_by("critic", conversation)]
    [('user', None, 'Write a haiku.'), ('user', 'poet', '[poet]\\nOld pond, a frog.')]
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence

from raf.messages import ChatMessage, ToolCallContent, ToolResultContent

Presented = dict[tuple[int, ...], tuple[tuple[ChatMessage, ...], ChatMessage]]
"""Attributed messages already built, keyed by the ids of the messages each one presents.

How a run of one agent's messages is shown does not depend on who looks, so the agents of one
run share these (`raf.run.Turn.presented`): in a chain each agent would otherwise build again
what the one before it built. Each entry keeps the messages it presents, so an id is never
mistaken for another message's.
"""


Prefixes = dict[int, "_Prefix"]
"""How the start of a conversation was shown, by the id of its last message, for the seats of
one run (`raf.run.Turn.prefixes`): in a chain each agent's conversation is the one before it
plus that agent's answer, so each request presents only what is new."""


class _Prefix:
    """The state of `seen_by` after the non-system messages `messages`, valid for any seat
    that wrote none of them."""

    __slots__ = ("authors", "group", "group_author", "messages", "open_calls", "out")

    def __init__(
        self,
        messages: tuple[ChatMessage, ...],
        authors: frozenset[str],
        out: list[ChatMessage],
        group: list[ChatMessage],
        group_author: str,
        open_calls: set[str],
    ) -> None:
        self.messages = messages
        self.authors = authors
        self.out = out
        self.group = group
        self.group_author = group_author
        self.open_calls = open_calls


_LOOK_BACK = 4
"""How many messages back from the end a reusable prefix may end (a chain adds one or two)."""


def seen_by(
    seat: str | None,
    messages: Iterable[ChatMessage],
    presented: Presented | None = None,
    prefixes: Prefixes | None = None,
) -> list[ChatMessage]:
    """The conversation `messages` as the model of agent `seat` is shown it.

    Args:
        seat: the id of the agent making the request (the author of its own messages), or
            None for a call that has no messages of its own (a one-shot structured call).
        messages: the conversation, system messages included.
        presented: attributed messages built for other seats of the same run, reused and
            added to.
        prefixes: how other seats of the same run were shown the start of this conversation,
            reused and added to.
    """
    memo: Presented = {} if presented is None else presented
    listed = messages if isinstance(messages, list) else list(messages)
    lead = 0  # the system messages a request starts with (the instructions)
    while lead < len(listed) and listed[lead].role == "system":
        lead += 1
    systems = listed[:lead]
    body = listed[lead:]
    out: list[ChatMessage] = []
    open_calls: set[str] = set()  # calls of this agent's last assistant message, unanswered
    group: list[ChatMessage] = []  # consecutive messages of one other agent, not yet written
    group_author = ""
    authors: set[str] = set()
    start = 0
    if prefixes is not None:
        known = _known_prefix(seat, body, prefixes)
        if known is not None:
            start = len(known.messages)
            out = list(known.out)
            group = list(known.group)
            group_author = known.group_author
            open_calls = set(known.open_calls)
            authors = set(known.authors)
    plain = True  # no system message past the start: the state may be reused
    for message in body[start:]:
        role = message.role
        if role == "system":
            systems.append(message)
            plain = False
            continue
        author = message.author
        if author is not None:
            authors.add(author)
        if author is not None and author != seat and role in _SPOKEN:
            if group and group_author != author:
                out.append(_shown(group_author, group, memo))
                group = []
            group_author = author
            group.append(message)
            open_calls = set()
            continue
        if group:
            out.append(_shown(group_author, group, memo))
            group = []
        if role == "assistant":
            open_calls = {c.call_id for c in message.contents if c.type == "tool_call"}
            out.append(message)
        elif role == "tool":
            out.extend(_own_results(message, open_calls))
        else:
            open_calls = set()
            out.append(message)
    if prefixes is not None and plain and start < len(body) and seat not in authors:
        # What another seat can start from: the state before the last group is written.
        prefixes[id(body[-1])] = _Prefix(
            tuple(body), frozenset(authors), list(out), list(group), group_author, set(open_calls)
        )
    if group:
        out.append(_shown(group_author, group, memo))
    if len(systems) > 1:
        systems = [ChatMessage.system("\n\n".join(m.text for m in systems))]
    return [*systems, *out] if systems else out


def _known_prefix(seat: str | None, body: list[ChatMessage], prefixes: Prefixes) -> _Prefix | None:
    """The longest prefix of `body` another seat was shown that `seat` wrote nothing of."""
    for end in range(len(body), max(0, len(body) - _LOOK_BACK), -1):
        known = prefixes.get(id(body[end - 1]))
        if known is None or len(known.messages) != end or seat in known.authors:
            continue
        if all(map(operator.is_, known.messages, body)):
            return known
    return None


_SPOKEN = frozenset({"assistant", "tool"})


def attributed(author: str, body: str) -> str:
    """The text of a message by `author` shown to another agent: an `[author]` line, the body.

    Example:
        >>> attributed("poet", "Old pond.")
        '[poet]\\nOld pond.'
    """
    return f"[{author}]\n{body}"


def describe_call(call: ToolCallContent) -> str:
    """One line saying that a tool was called, and with what."""
    return f"Called tool {call.name} with {call.arguments or '{}'}"


def describe_result(result: ToolResultContent, names: dict[str, str]) -> str:
    """One line giving a tool's result (its name looked up by call id in `names`)."""
    name = names.get(result.call_id)
    what = f"Tool {name}" if name is not None else f"The result of call {result.call_id}"
    verb = "failed" if result.is_error else "returned"
    return f"{what} {verb}: {result.result}"


def _shown(author: str, messages: list[ChatMessage], memo: Presented) -> ChatMessage:
    """Consecutive messages of one other agent as one attributed user message."""
    if len(messages) == 1:
        key: tuple[int, ...] = (id(messages[0]),)
        known = memo.get(key)
        if known is not None and known[0][0] is messages[0]:
            return known[1]
    else:
        key = tuple(map(id, messages))
        known = memo.get(key)
        if known is not None and all(a is b for a, b in zip(known[0], messages, strict=True)):
            return known[1]
    lines: list[str] = []
    names: dict[str, str] = {}  # the tools this agent called, by call id
    for message in messages:
        for content in message.contents:
            if content.type == "text":
                if content.text:
                    lines.append(content.text)
            elif content.type == "tool_call":
                names[content.call_id] = content.name
                lines.append(describe_call(content))
            elif content.type == "tool_result":
                lines.append(describe_result(content, names))
    # Validated from plain data: faster than building the content models one by one.
    shown = ChatMessage.model_validate(
        {
            "role": "user",
            "contents": [{"type": "text", "text": attributed(author, "\n".join(lines))}],
            "author": author,
        }
    )
    memo[key] = (tuple(messages), shown)
    return shown


def _own_results(message: ChatMessage, open_calls: set[str]) -> Sequence[ChatMessage]:
    """This agent's tool message: kept when it answers its own open calls, else user text."""
    results = [c for c in message.contents if c.type == "tool_result"]
    if results and all(r.call_id in open_calls for r in results):
        for r in results:
            open_calls.discard(r.call_id)
        return (message,)
    out: list[ChatMessage] = []
    for r in results:
        if r.call_id in open_calls:
            open_calls.discard(r.call_id)
            out.append(ChatMessage(role="tool", contents=[r], author=message.author))
        else:
            out.append(ChatMessage.user(r.result))
    return out
