"""Magentic-One: a manager plans, hands out the work round by round, and writes the answer.

A researcher looks facts up with a tool, a writer drafts; the manager's task and progress
ledgers stream as reasoning. A second run on the same session continues the task.

A manager model has to answer its progress ledgers with JSON; one that writes something else
is corrected and asked again, and a round without a usable ledger counts as a stall, so even a
model that cannot keep to JSON ends with an answer (one that says the team gave up).

Run: python examples/magentic.py (or, from the repository root, python -m examples.magentic)
"""

from __future__ import annotations

import json

import anyio

from raf import ChatMessage, MagenticBuilder, ReactAgent, Session, tool
from raf.testing import Turn, text, tool_calls

if __package__:  # python -m examples.magentic
    from examples._models import last_text, provider_for
else:  # python examples/magentic.py
    from _models import last_text, provider_for

OPENING_HOURS = {"bakery": "7:00-18:00", "library": "9:00-20:00"}


@tool
def opening_hours(place: str) -> str:
    """Look up when a place is open.

    Args:
        place: the place, e.g. "bakery".
    """
    return OPENING_HOURS.get(place.lower(), "unknown")


def entry(answer: object, reason: str = "from the transcript") -> dict[str, object]:
    return {"reason": reason, "answer": answer}


def manager_script(messages: list[ChatMessage]) -> Turn:
    """The scripted manager: it reads its own prompt to know which ledger it is asked for."""
    prompt, briefing = messages[0].text, messages[-1].text
    if "survey the facts" in prompt:  # the task ledger's first call: the facts
        return text("1. GIVEN: the asker wants opening hours\n2. TO LOOK UP: the hours")
    if "make a plan" in prompt:  # its second call: the plan
        return text("- researcher: look the hours up\n- writer: write a short note")
    if "progress ledger" in prompt:
        asked = [line for line in briefing.splitlines() if line.startswith("[user]")][-1]
        hours = OPENING_HOURS["library" if "library" in asked else "bakery"]
        last = briefing.splitlines()[-1]
        done = last.startswith("[writer]") and hours in last
        speaker = "writer" if last.startswith("[researcher]") else "researcher"
        task = "Write a one-line note with the hours." if speaker == "writer" else asked[7:]
        ledger = {
            "is_request_satisfied": entry(done),
            "is_in_loop": entry(False),
            "is_progress_being_made": entry(True),
            "next_speaker": entry(speaker, "the plan's next step"),
            "instruction": entry(task),
        }
        return text(json.dumps(ledger))
    notes = [line for line in briefing.splitlines() if line.startswith("[writer]")]
    return text(notes[-1].removeprefix("[writer] ") if notes else "I could not find out.")


def researcher_script(messages: list[ChatMessage]) -> Turn:
    if messages[-1].role == "tool":
        return text(f"Found: {messages[-1].contents[0].result}")  # type: ignore[union-attr]
    place = "library" if "library" in last_text(messages) else "bakery"
    return tool_calls(("opening_hours", {"place": place}))


def writer_script(messages: list[ChatMessage]) -> Turn:
    # The researcher's answer comes as a user message that names it: "[researcher]\nFound: ..."
    lines = [line for m in messages for line in m.text.splitlines()]
    found = [line for line in lines if line.startswith("Found:")]
    return text(f"Note: open {found[-1].removeprefix('Found: ')}." if found else "Note: unknown.")


async def main() -> None:
    async with (
        provider_for(manager_script) as manager,
        provider_for(researcher_script) as r,
        provider_for(writer_script) as w,
    ):
        team = (
            MagenticBuilder(manager, id="errands")
            .add_agent(
                ReactAgent(
                    "researcher",
                    r,
                    "Look facts up with your tools and report them.",
                    tools=[opening_hours],
                    description="looks facts up (opening hours)",
                )
            )
            .add_agent(
                ReactAgent(
                    "writer",
                    w,
                    "Write a short, friendly note from the facts in the conversation.",
                    description="writes short notes",
                )
            )
            .with_limits(max_rounds=8)
            .build()
            .as_agent()
        )
        print(f"team {team.id}: {', '.join(team.metadata.children)}")
        session = Session()
        async with team.run("When is the bakery open?", session) as stream:
            async for update in stream:
                if update.type == "reasoning_delta" and update.path == ("errands",):
                    print(f"[manager] {update.text.splitlines()[0]}")
                elif update.type == "tool_called":
                    print(f"[{'/'.join(update.path)}] {update.name} -> {update.result}")
                elif update.type == "message_completed" and update.path == ("errands",):
                    print(f"answer: {update.message.text}")
        again = await team.run("And the library?", session).collect()
        print(f"follow-up: {again.text}")


if __name__ == "__main__":
    anyio.run(main)
