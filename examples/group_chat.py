"""A group chat: a model picks who speaks next; the chat ends when the critic approves.

Run: python examples/group_chat.py (or, from the repository root, python -m examples.group_chat)
"""

from __future__ import annotations

import anyio

from raf import (
    GroupChatBuilder,
    IAgent,
    MaxRounds,
    ReactAgent,
    SchemaValidationError,
    Session,
    TextMention,
    llm_selector,
    round_robin,
)
from raf.builders import Selector
from raf.messages import ChatMessage
from raf.testing import Turn, text

if __package__:  # python -m examples.group_chat
    from examples._models import last_text, provider_for
else:  # python examples/group_chat.py
    from _models import last_text, provider_for

MEMBERS = ("writer", "critic")


def spoken(messages: list[ChatMessage]) -> list[ChatMessage]:
    """The members' messages of the transcript."""
    return [m for m in messages if m.author in MEMBERS]


def choose(messages: list[ChatMessage]) -> Turn:
    """The scripted selector: the writer first, then writer and critic in turn."""
    said = spoken(messages)
    nxt = "critic" if said and said[-1].author == "writer" else "writer"
    return text(f'{{"reason": "{nxt} is due", "speaker": "{nxt}"}}')


DRAFTS = (
    "Rain on the tin roof, / the whole night drumming softly, / dawn comes washed and new.",
    "Rain on the tin roof; / all night it drums. At daybreak / the world, rinsed, wakes.",
)


def write(messages: list[ChatMessage]) -> Turn:
    drafts = sum(m.author == "writer" for m in spoken(messages))
    return text(DRAFTS[drafts % len(DRAFTS)])


def critique(messages: list[ChatMessage]) -> Turn:
    if "rinsed" in last_text(messages):
        return text("Tight and vivid. APPROVED")
    return text("Too many soft words; cut the second line.")


async def main() -> None:
    async with (
        provider_for(choose) as selector_model,
        provider_for(write) as writer_model,
        provider_for(critique) as critic_model,
    ):
        writer = ReactAgent(
            "writer", writer_model, "Write or revise a haiku.", description="Writes haiku."
        )
        critic = ReactAgent(
            "critic",
            critic_model,
            "Critique the latest haiku; say APPROVED when it is good.",
            description="Critiques haiku and approves good ones.",
        )
        try:
            await chat([writer, critic], llm_selector(selector_model))
        except SchemaValidationError as error:
            # A model that cannot follow the JSON schema cannot pick speakers: take turns.
            print(f"the selector model could not choose ({error.message[:60]}...); round robin")
            await chat([writer, critic], round_robin())


async def chat(members: list[IAgent], selector: Selector) -> None:
    """Run one chat among `members`, printing who speaks and what they say."""
    builder = GroupChatBuilder(id="room").with_selector(selector)
    for member in members:
        builder.add_agent(member)
    room = builder.with_termination(TextMention("APPROVED") | MaxRounds(6)).build().as_agent()
    rounds = 0
    async with room.run("A haiku about rain.", Session()) as stream:
        async for update in stream:
            if update.type == "executor_invoked" and update.executor_id == "selector":
                if update.value is not None:
                    print(f"selector chose {update.value}")
            elif update.type == "message_completed":
                rounds += 1
                print(f"  [{'/'.join(update.path)}] {update.message.text}")
    print(f"chat ended after {rounds} rounds")


if __name__ == "__main__":
    anyio.run(main)
