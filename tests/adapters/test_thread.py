from __future__ import annotations

from datetime import UTC

import pytest
from pydantic import BaseModel, ValidationError

from raf.adapters import Step, ThreadContext, thread_messages
from raf.messages import ChatMessage


class Draft(BaseModel):
    title: str


def test_thread_messages_are_the_start_then_one_message_listing_the_steps() -> None:
    thread = ThreadContext(
        thread_id="t1",
        depth=2,
        start=[ChatMessage.user("Write about tides.")],
        steps=[
            Step(role="writer", value=Draft(title="Tides")),
            Step(role="critic", value={"ok": False}),
        ],
    )
    messages = thread_messages(thread)
    assert messages[0] == ChatMessage.user("Write about tides.")
    assert messages[1].role == "user"
    assert messages[1].text.splitlines() == [
        "Outputs of the earlier roles of this thread, oldest first:",
        '[writer] {"title":"Tides"}',
        '[critic] {"ok":false}',
    ]


def test_no_steps_means_just_the_start() -> None:
    start = [ChatMessage.user("hi")]
    assert thread_messages(ThreadContext(thread_id="t", start=start)) == start


def test_steps_are_timestamped_and_the_thread_is_frozen() -> None:
    step = Step(role="writer", value=1)
    assert step.at.tzinfo is UTC
    thread = ThreadContext(thread_id="t")
    with pytest.raises(ValidationError):
        thread.depth = 3  # type: ignore[misc]
    assert ThreadContext.model_validate_json(thread.model_dump_json()) == thread
