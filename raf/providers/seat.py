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

from collections.abc import Iterable, Sequence
from functools import lru_cache

from raf._trusted import trusted
from raf.messages import ChatMessage, TextContent, ToolCallContent, ToolResultContent

Presented = dict[int, tuple[tuple[ChatMessage, ...], ChatMessage]]
"""Attributed messages already built, keyed by the id of the first message each one presents.

How a run of one agent's messages is shown does not depend on who looks, so the agents of one
run share these (`raf.run.Turn.presented`): in a chain each agent would otherwise build again
what the one before it built. Each entry keeps the messages it presents, so an id is never
mistaken for another message's.
"""


class _Prefix:
    """What `seen_by` built for the non-system messages `messages[:size]`, valid for any seat
    that wrote none of them: a later request that starts with them goes on from here.

    A chain's states share their lists: the next seat's state appends its one new message to
    `messages` (and what it adds to `out` and `authors`) when no state went on from this one
    yet, so a state costs what it adds, not the length of the conversation: kept for the run,
    whole copies would be O(N) each, and the garbage collector would walk them all again and
    again. What a state covers never changes once made."""

    __slots__ = ("authors", "group", "messages", "open_calls", "out", "out_size", "shown", "size")

    def __init__(
        self,
        messages: list[ChatMessage],
        authors: dict[str, int],
        out: list[ChatMessage],
        group: tuple[ChatMessage, ...],
        shown: ChatMessage | None,
        open_calls: frozenset[str],
    ) -> None:
        self.messages = messages
        """The messages presented, from the first (kept, so an id is never mistaken for another
        message's); longer than `size` once a later state shares the list."""
        self.size = len(messages)
        self.authors = authors
        """Every author of `messages`, with the index of its first message (an author of this
        state's messages when that index is below `size`)."""
        self.out = out
        """Their presentation but for `group`: its first `out_size` messages."""
        self.out_size = len(out)
        self.group = group
        """The last consecutive messages of one other agent (empty when the last is not)."""
        self.shown = shown
        """`group` as one attributed message (None when `group` is empty)."""
        self.open_calls = open_calls
        """The calls of the seat's last assistant message still unanswered."""

    def wrote(self, seat: str | None) -> bool:
        """Whether `seat` wrote any of the messages."""
        return seat is not None and self.authors.get(seat, self.size) < self.size

    def starts(self, body: list[ChatMessage], end: int) -> bool:
        """Whether `body[:end]` is what this state presents (equal messages are shown alike;
        the comparison is by identity first, so cheap)."""
        messages, size = self.messages, self.size
        if end != size:
            return False
        return body[:end] == (messages if len(messages) == size else messages[:size])

    def presentation(self) -> list[ChatMessage]:
        """`out`'s own part (a copy when it is shared)."""
        return self.out if len(self.out) == self.out_size else self.out[: self.out_size]


Prefixes = dict[int | str, _Prefix]
"""How the start of a conversation was shown, for the seats of one run (`raf.run.Turn.prefixes`):
by the id of its last message when no message in it is the seat's own (valid for every seat
that wrote none of them), and by the seat's id for the last one a seat was shown with messages
of its own in it (valid for that seat only). In a chain each agent's conversation is the one
before it plus that agent's answer; in a group chat a member's next request is its last one
plus what was said since: either way each request presents only what is new."""


_LOOK_BACK = 4
"""How many messages back from the end a reusable prefix may end (a chain adds one or two)."""

_NO_CALLS: frozenset[str] = frozenset()


def seen_by(
    seat: str | None,
    messages: Iterable[ChatMessage],
    presented: Presented | None = None,
    prefixes: Prefixes | None = None,
    *,
    system: Sequence[ChatMessage] = (),
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
        system: system messages to put before `messages` (the agent's instructions).
    """
    memo: Presented = {} if presented is None else presented
    listed = messages if isinstance(messages, list) else list(messages)
    lead = 0  # the system messages the conversation starts with
    while lead < len(listed) and listed[lead].role == "system":
        lead += 1
    systems = [*system, *listed[:lead]] if lead else list(system)
    # The non-system messages: the caller's list itself when it has none (read, never kept).
    body = listed[lead:] if lead else listed
    lead = len(systems)
    state = _chained(seat, body, prefixes, memo) if prefixes else None
    if state is None:
        if body is messages:
            body = list(body)  # a copy this call owns: a state may keep it
        known = _known_prefix(seat, body, prefixes) if prefixes else None
        state = _walk(seat, body, known, memo, systems)
        # A new state (unless a system message came after the start, which `systems` took):
        # for every seat when this one wrote nothing in it, else for this seat's next request.
        new = body and state.messages is body and len(systems) == lead
        if prefixes is not None and new:
            if not state.wrote(seat):
                prefixes[id(body[-1])] = state
            elif seat is not None:
                prefixes[seat] = state
    elif prefixes is not None:
        prefixes[id(body[-1])] = state
    if len(systems) > 1:
        systems = [ChatMessage.system("\n\n".join(m.text for m in systems))]
    out = state.out
    systems += out if len(out) == state.out_size else state.presentation()
    if state.shown is not None:
        systems.append(state.shown)
    return systems


def _chained(
    seat: str | None, body: list[ChatMessage], prefixes: Prefixes, memo: Presented
) -> _Prefix | None:
    """The state after `body` when it is what another seat was shown plus one answer of a
    third agent (the next seat of a chain), else None: the usual case, taken directly."""
    if len(body) < 2:
        return None
    known = prefixes.get(id(body[-2]))
    if known is None:
        return None
    message = body[-1]
    author = message.author
    size = known.size
    messages, out, authors = known.messages, known.out, known.authors
    # `wrote` and `starts`, inline (once per request of a chain)
    if (
        author is None
        or author == seat
        or message.role not in _SPOKEN
        or (seat is not None and authors.get(seat, size) < size)
        or (known.group and known.group[0].author == author)
        or len(body) - 1 != size
        or body[:-1] != (messages if len(messages) == size else messages[:size])
    ):
        return None
    if len(messages) != size:  # another state went on from `known`: this one copies its part
        messages = messages[:size]
        out = out[: known.out_size]
        authors = {a: i for a, i in authors.items() if i < size}
    messages.append(message)
    if known.shown is not None:
        out.append(known.shown)
    authors.setdefault(author, size)
    group = (message,)
    return _Prefix(messages, authors, out, group, _shown(group, memo), _NO_CALLS)


def _walk(
    seat: str | None,
    body: list[ChatMessage],
    known: _Prefix | None,
    memo: Presented,
    systems: list[ChatMessage],
) -> _Prefix:
    """The state after `body` for `seat`, going on from `known` (a state for its start);
    system messages met on the way are added to `systems`. Returns `known` itself when
    nothing follows it."""
    authors: dict[str, int]
    if known is None:
        start = 0
        out: list[ChatMessage] = []
        group: tuple[ChatMessage, ...] = ()  # consecutive messages of one other agent
        shown: ChatMessage | None = None  # `group` presented, once built
        open_calls = _NO_CALLS  # calls of this agent's last assistant message, unanswered
        authors = {}
    else:
        start = known.size
        if start == len(body):
            return known
        out = known.out[: known.out_size]
        group = known.group
        shown = known.shown
        open_calls = known.open_calls
        authors = {a: i for a, i in known.authors.items() if i < start}
    for index, message in enumerate(body[start:] if start else body, start):
        role = message.role
        if role == "system":
            systems.append(message)
            continue
        author = message.author
        if author is not None:
            if author not in authors:
                authors[author] = index
            if author != seat and role in _SPOKEN:
                if group and group[0].author == author:
                    group = (*group, message)
                else:
                    if group:
                        out.append(shown if shown is not None else _shown(group, memo))
                    group = (message,)
                shown = None
                open_calls = _NO_CALLS
                continue
        if group:
            out.append(shown if shown is not None else _shown(group, memo))
            group = ()
            shown = None
        if role == "assistant":
            open_calls = frozenset(c.call_id for c in message.contents if c.type == "tool_call")
            out.append(message)
        elif role == "tool":
            kept, open_calls = _own_results(message, open_calls)
            out.extend(kept)
        else:
            open_calls = _NO_CALLS
            out.append(message)
    if group and shown is None:
        shown = _shown(group, memo)
    return _Prefix(body, authors, out, group, shown, open_calls)


def _known_prefix(seat: str | None, body: list[ChatMessage], prefixes: Prefixes) -> _Prefix | None:
    """The longest start of `body` shown before that is valid for `seat`: one another seat was
    shown with nothing of `seat` in it, ending at most `_LOOK_BACK` messages from the end, or
    the last start `seat` itself was shown."""
    end = len(body)
    stop = end - _LOOK_BACK if end > _LOOK_BACK else 0
    found: _Prefix | None = None
    while end > stop:
        known = prefixes.get(id(body[end - 1]))
        if known is not None and not known.wrote(seat) and known.starts(body, end):
            found = known
            break
        end -= 1
    own = prefixes.get(seat) if seat is not None else None
    if own is not None:
        size = own.size
        if (found is None or size > end) and size <= len(body) and own.starts(body, size):
            return own
    return found


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


def _shown(messages: tuple[ChatMessage, ...], memo: Presented) -> ChatMessage:
    """Consecutive messages of one other agent as one attributed user message."""
    key = id(messages[0])
    known = memo.get(key)
    if known is not None and known[0] == messages:
        return known[1]
    first = messages[0]
    author = first.author
    assert author is not None
    contents = first.contents
    if len(messages) == 1 and len(contents) == 1 and contents[0].type == "text":
        shown = _attributed_text(author, contents[0])  # the usual
        memo[key] = (messages, shown)
        return shown
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
    shown = _attributed_text(author, TextContent(text="\n".join(lines)))
    memo[key] = (messages, shown)
    return shown


def _attributed_text(author: str, text: TextContent) -> ChatMessage:
    """The user message naming `author` that holds `text`: two parts, the `[author]` line and
    `text` itself, so `.text` is `attributed(author, text.text)` and an agent's own text part
    is shown as it is (one new object per message shown, not two)."""
    values = {"role": "user", "contents": [_header(author), text], "author": author}
    return trusted(ChatMessage, values, {"role", "contents", "author"})


@lru_cache(maxsize=1024)
def _header(author: str) -> TextContent:
    """The `[author]` line that opens what another agent is shown of `author`'s messages."""
    return TextContent(text=attributed(author, ""))


def _own_results(
    message: ChatMessage, open_calls: frozenset[str]
) -> tuple[Sequence[ChatMessage], frozenset[str]]:
    """This agent's tool message: kept when it answers its own open calls, else user text;
    and the calls still open after it."""
    results = [c for c in message.contents if c.type == "tool_result"]
    answered = frozenset(r.call_id for r in results)
    if results and answered <= open_calls:
        return (message,), open_calls - answered
    out: list[ChatMessage] = []
    still_open = set(open_calls)
    for r in results:
        if r.call_id in still_open:
            still_open.discard(r.call_id)
            out.append(ChatMessage(role="tool", contents=[r], author=message.author))
        else:
            out.append(ChatMessage.user(r.result))
    return out, frozenset(still_open)
