"""seen_by: the conversation as one agent's model is shown it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from raf.messages import ChatMessage, TextContent, ToolCallContent, ToolResultContent
from raf.providers._chat_format import to_chat_completions
from raf.providers.seat import Prefixes, Presented, seen_by


def _calls(author: str, *calls: tuple[str, str]) -> ChatMessage:
    contents = [ToolCallContent(call_id=i, name=n, arguments='{"q": 1}') for i, n in calls]
    return ChatMessage(role="assistant", contents=list(contents), author=author)


def _result(author: str | None, call_id: str, result: str, *, error: bool = False) -> ChatMessage:
    content = ToolResultContent(call_id=call_id, result=result, is_error=error)
    return ChatMessage(role="tool", contents=[content], author=author)


def test_own_messages_stay_assistant_and_others_become_attributed_user_messages() -> None:
    conversation = [
        ChatMessage.system("Be brief."),
        ChatMessage.user("Plan a trip."),
        ChatMessage.assistant("Oslo.", author="researcher"),
        ChatMessage.assistant("Earlier answer of mine.", author="planner"),
    ]
    assert seen_by("planner", conversation) == [
        ChatMessage.system("Be brief."),
        ChatMessage.user("Plan a trip."),
        ChatMessage(
            role="user",
            # The `[author]` line, then the author's own part as it is.
            contents=[TextContent(text="[researcher]\n"), conversation[2].contents[0]],
            author="researcher",
        ),
        ChatMessage.assistant("Earlier answer of mine.", author="planner"),
    ]
    assert seen_by("planner", conversation)[2].text == "[researcher]\nOslo."


def test_another_agents_tool_turns_are_summarised_in_one_user_message() -> None:
    conversation = [
        ChatMessage.user("Sights?"),
        _calls("researcher", ("c1", "find_sights"), ("c2", "weather")),
        _result("researcher", "c1", "Opera"),
        _result("researcher", "c2", "timeout", error=True),
        ChatMessage.assistant("The Opera.", author="researcher"),
    ]
    seen = seen_by("planner", conversation)
    assert [(m.role, m.author) for m in seen] == [("user", None), ("user", "researcher")]
    assert seen[1].text == (
        "[researcher]\n"
        'Called tool find_sights with {"q": 1}\n'
        'Called tool weather with {"q": 1}\n'
        "Tool find_sights returned: Opera\n"
        "Tool weather failed: timeout\n"
        "The Opera."
    )


def test_own_tool_calls_keep_their_pairing() -> None:
    conversation = [
        ChatMessage.user("Sights?"),
        _calls("planner", ("c1", "find_sights")),
        _result("planner", "c1", "Opera"),
        ChatMessage.assistant("The Opera.", author="planner"),
    ]
    assert seen_by("planner", conversation) == conversation


def test_an_orphan_tool_result_goes_out_as_user_text() -> None:
    # A human's typed answer to a workflow request: its call id is no call of this agent.
    answer = ChatMessage.tool_result("wf/gate@0#0", '{"approved": true}')
    conversation = [ChatMessage.user("Go?"), ChatMessage.assistant("Asking.", author="a"), answer]
    seen = seen_by("a", conversation)
    assert seen[-1] == ChatMessage.user('{"approved": true}')
    assert all(m["role"] != "tool" for m in to_chat_completions(seen))


def test_a_result_after_a_foreign_message_is_no_longer_paired() -> None:
    conversation = [
        _calls("a", ("c1", "f")),
        ChatMessage.assistant("interrupting", author="b"),
        _result("a", "c1", "late"),
    ]
    seen = seen_by("a", conversation)
    assert [m.role for m in seen] == ["assistant", "user", "user"]
    assert seen[-1].text == "late"


def test_system_messages_merge_into_one_first_system_message() -> None:
    conversation = [
        ChatMessage.system("You plan."),
        ChatMessage.user("hi"),
        ChatMessage.system("Role: be terse."),
    ]
    seen = seen_by("a", conversation)
    assert seen == [ChatMessage.system("You plan.\n\nRole: be terse."), ChatMessage.user("hi")]


def test_without_a_seat_every_authored_message_is_another_agents() -> None:
    seen = seen_by(None, [ChatMessage.user("q"), ChatMessage.assistant("x", author="a")])
    assert [(m.role, m.text) for m in seen] == [("user", "q"), ("user", "[a]\nx")]


def test_unauthored_assistant_messages_count_as_the_agents_own() -> None:
    conversation = [ChatMessage.user("q"), ChatMessage.assistant("typed by the caller")]
    assert seen_by("a", conversation) == conversation


def test_names_are_sanitised_for_the_api_and_kept_in_the_text() -> None:
    seen = seen_by("b", [ChatMessage.assistant("hello", author="team lead/1")])
    (sent,) = to_chat_completions(seen)
    assert sent == {"role": "user", "name": "team_lead_1", "content": "[team lead/1]\nhello"}


_AUTHORS = st.sampled_from(["a", "b", "c", None])


def _turn(draw: st.DrawFn, index: int, *, system: bool = False) -> list[ChatMessage]:
    """One step of a conversation: an answer, a tool turn, user text, a stray tool result,
    or (with `system`) a system message."""
    kinds = ["text", "tools", "user", "orphan", *(["system"] if system else [])]
    kind = draw(st.sampled_from(kinds))
    author = draw(_AUTHORS)
    if kind == "text":
        return [ChatMessage.assistant(f"t{index}", author=author)]
    if kind == "tools":
        call_id = f"c{index}"
        return [_calls(author or "a", (call_id, "f")), _result(author or "a", call_id, f"r{index}")]
    if kind == "user":  # now and then another agent's words already shown as user text
        return [ChatMessage.user(f"u{index}", draw(st.sampled_from([None, None, "b"])))]
    if kind == "orphan":
        return [_result(author, f"x{index}", f"o{index}")]
    return [ChatMessage.system(f"s{index}")]


@st.composite
def _conversations(draw: st.DrawFn) -> list[ChatMessage]:
    """Random conversations of several agents, with tool turns and stray tool results."""
    messages: list[ChatMessage] = [ChatMessage.user("start")]
    for index in range(draw(st.integers(0, 12))):
        messages.extend(_turn(draw, index))
    return messages


@st.composite
def _runs(draw: st.DrawFn) -> list[tuple[str | None, list[ChatMessage]]]:
    """The requests of one run: each conversation is the last one with one step more (a
    chain's next seat), or an earlier one, cut anywhere, with up to three steps more (a
    branch, one agent going on, a system message on the way), now and then with a message
    swapped for an equal copy or another message; the seats are random, so some have
    messages of their own in what they see."""
    conversations = [draw(_conversations())]
    requests: list[tuple[str | None, list[ChatMessage]]] = []
    for step in range(draw(st.integers(1, 10))):
        if draw(st.booleans()):  # the next seat of a chain: the last request and one step more
            conversation = [*conversations[-1], *_turn(draw, 100 * step)]
            conversations.append(conversation)
            requests.append((draw(st.sampled_from(["a", "b", "c", "d", None])), conversation))
            continue
        before = draw(st.sampled_from(conversations))
        whole = draw(st.booleans())  # mostly: everything before, as in a chain
        conversation = list(before) if whole else before[: draw(st.integers(0, len(before)))]
        for index in range(draw(st.integers(0, 3))):
            conversation.extend(_turn(draw, 100 * step + index, system=True))
        if conversation and draw(st.booleans()):
            at = draw(st.integers(0, len(conversation) - 1))
            swap = draw(st.sampled_from(["copy", "other"]))
            if swap == "copy":
                conversation[at] = conversation[at].model_copy()
            else:
                conversation[at] = ChatMessage.assistant(f"other{step}", author="c")
        conversations.append(conversation)
        requests.append((draw(st.sampled_from(["a", "b", "c", "d", None])), conversation))
    return requests


@given(_conversations(), st.sampled_from(["a", "b", "c"]))
def test_a_request_is_always_well_formed_from_any_seat(
    conversation: list[ChatMessage], seat: str
) -> None:
    before = list(conversation)
    seen = seen_by(seat, [ChatMessage.system("instructions"), *conversation])
    assert conversation == before  # the history itself is never changed
    assert [m.role for m in seen].count("system") == 1 and seen[0].role == "system"
    sent = to_chat_completions(seen)
    open_calls: set[str] = set()
    for message in sent:
        if message["role"] == "assistant":
            # Only this agent's own messages (or unauthored ones) are assistant messages.
            assert message.get("name") in (seat, None)
            open_calls = {c["id"] for c in message.get("tool_calls", [])}  # type: ignore[typeddict-item]
        elif message["role"] == "tool":
            assert message["tool_call_id"] in open_calls  # never an orphan tool message
        else:
            open_calls = set()
    if sent[-1]["role"] == "assistant":
        assert sent[-1].get("name") in (seat, None)


@given(_conversations())
def test_a_memo_shared_by_the_seats_of_a_run_changes_nothing(
    conversation: list[ChatMessage],
) -> None:
    presented: Presented = {}
    for seat in ("a", "b", "c", "a"):
        assert seen_by(seat, conversation, presented) == seen_by(seat, conversation)


def test_the_seats_of_a_run_share_one_attributed_message() -> None:
    conversation = [ChatMessage.user("q"), ChatMessage.assistant("x", author="a")]
    presented: Presented = {}
    first = seen_by("b", conversation, presented)[-1]
    assert seen_by("c", conversation, presented)[-1] is first
    # Another message that happens to get the same id is never taken for the first.
    (key,) = presented
    presented[key] = ((ChatMessage.assistant("other", author="a"),), first)
    assert seen_by("c", conversation, presented)[-1] is not first


@given(_conversations(), st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=6))
def test_prefixes_shared_by_the_seats_of_a_run_change_nothing(
    conversation: list[ChatMessage], seats: list[str]
) -> None:
    # As in a chain: each seat is shown a longer start of one conversation, then the whole.
    presented: Presented = {}
    prefixes: Prefixes = {}
    system = ChatMessage.system("Be brief.")
    for end in range(len(conversation) + 1):
        for seat in seats:
            shown = [system, *conversation[:end]]
            assert seen_by(seat, shown, presented, prefixes) == seen_by(seat, shown)


def _chain(prefixes: Prefixes, presented: Presented, seats: int) -> list[ChatMessage]:
    """A chain's requests, seat after seat, each answering; the whole conversation."""
    conversation = [ChatMessage.user("go")]
    for index in range(seats):
        seat = f"agent{index}"
        seen_by(seat, conversation, presented, prefixes)
        conversation = [*conversation, ChatMessage.assistant(f"from {seat}", author=seat)]
    return conversation


def test_a_chain_presents_only_what_is_new_to_each_later_seat() -> None:
    prefixes: Prefixes = {}
    presented: Presented = {}
    conversation = _chain(prefixes, presented, 6)
    # Each request stored the state after its conversation, for the next seat to start from.
    assert len(prefixes) == 6
    last = seen_by("agent6", conversation, presented, prefixes)
    assert [m.text.splitlines()[0] for m in last] == ["go"] + [f"[agent{i}]" for i in range(6)]


@settings(max_examples=300)
@given(_runs())
def test_the_run_caches_never_change_what_a_seat_is_shown(
    requests: list[tuple[str | None, list[ChatMessage]]],
) -> None:
    # Every request of a run shares its attributed messages and shown starts; each must be
    # shown exactly what a request without them is shown, however the conversations relate.
    presented: Presented = {}
    prefixes: Prefixes = {}
    system = (ChatMessage.system("Be brief."),)
    for seat, conversation in requests:
        before = list(conversation)
        shown = seen_by(seat, conversation, presented, prefixes, system=system)
        assert shown == seen_by(seat, [*system, *conversation])
        assert conversation == before


def test_a_start_that_ends_in_the_same_message_but_differs_before_is_not_reused() -> None:
    answer = ChatMessage.assistant("Oslo.", author="a")
    presented: Presented = {}
    prefixes: Prefixes = {}
    first = [ChatMessage.user("Plan a trip."), answer]
    second = [ChatMessage.user("Name a city."), answer]
    seen_by("b", first, presented, prefixes)
    later = ChatMessage.assistant("Bergen.", author="b")
    assert seen_by("c", [*second, later], presented, prefixes)[0].text == "Name a city."
    assert seen_by("c", second, presented, prefixes)[0].text == "Name a city."


def test_a_seat_with_messages_of_its_own_in_a_shown_start_is_shown_its_own() -> None:
    presented: Presented = {}
    prefixes: Prefixes = {}
    conversation = [ChatMessage.user("q"), ChatMessage.assistant("mine", author="b")]
    seen_by("a", conversation, presented, prefixes)  # "b"'s answer shown to "a" as user text
    later = [*conversation, ChatMessage.assistant("x", author="a")]
    assert [m.role for m in seen_by("b", later, presented, prefixes)] == [
        "user",
        "assistant",
        "user",
    ]


def test_the_instructions_go_first_and_merge_with_the_conversations_own_system_text() -> None:
    conversation = [ChatMessage.system("Role: terse."), ChatMessage.user("hi")]
    seen = seen_by("a", conversation, system=[ChatMessage.system("You plan.")])
    assert seen == [ChatMessage.system("You plan.\n\nRole: terse."), ChatMessage.user("hi")]


def test_consecutive_answers_of_one_agent_are_one_attributed_message() -> None:
    conversation = [
        ChatMessage.user("q"),
        ChatMessage.assistant("Let me look.", author="a"),
        ChatMessage.assistant("Found it.", author="a"),
    ]
    (_, shown) = seen_by("b", conversation)
    assert (shown.role, shown.author, shown.text) == ("user", "a", "[a]\nLet me look.\nFound it.")


def test_a_tool_message_without_results_is_left_out() -> None:
    empty = ChatMessage(role="tool", contents=[TextContent(text="no result")], author="a")
    conversation = [ChatMessage.user("q"), _calls("a", ("c1", "f")), empty]
    assert seen_by("a", conversation) == conversation[:2]


def test_a_member_that_spoke_goes_on_from_what_it_was_shown_last() -> None:
    # A round robin: every request after the first round has the seat's own answers in it.
    presented: Presented = {}
    prefixes: Prefixes = {}
    conversation = [ChatMessage.user("topic")]
    for turn in range(8):
        seat = "abc"[turn % 3]
        assert seen_by(seat, conversation, presented, prefixes) == seen_by(seat, conversation)
        conversation = [*conversation, ChatMessage.assistant(f"{seat}{turn}", author=seat)]
    # Each member's last start is kept for it (under its id): the next request walks only
    # what was said since.
    assert prefixes["a"].messages == conversation[:7]
    assert prefixes["b"].messages == conversation[:8]
    assert prefixes["c"].messages == conversation[:6]


def test_a_chain_keeps_one_list_of_its_messages_for_all_its_states() -> None:
    # Each state covers a start of one shared list: kept for the run, copies would be O(N) each.
    prefixes: Prefixes = {}
    _chain(prefixes, {}, 6)
    assert len({id(state.messages) for state in prefixes.values()}) == 1
    assert len({id(state.out) for state in prefixes.values()}) == 1


def test_two_seats_going_on_from_one_start_are_each_shown_their_own() -> None:
    start = [ChatMessage.user("go"), ChatMessage.assistant("plan", author="a")]
    prefixes: Prefixes = {}
    presented: Presented = {}
    seen_by("b", start, presented, prefixes)
    left = [*start, ChatMessage.assistant("left", author="x")]
    right = [*start, ChatMessage.assistant("right", author="y")]
    for seat, conversation in (("c", left), ("d", right), ("e", left), ("x", right)):
        assert seen_by(seat, conversation, presented, prefixes) == seen_by(seat, conversation)
    # "x" wrote none of `right` but its own start: the shared state never claims it did.
    assert seen_by("x", [*left, ChatMessage.user("more")], presented, prefixes) == seen_by(
        "x", [*left, ChatMessage.user("more")]
    )
