"""Reading AG-UI events off an SSE body."""

from __future__ import annotations

import json
from typing import Any


def parse(body: str) -> list[dict[str, Any]]:
    """The JSON of every `data:` line of an SSE body, in order."""
    return [json.loads(line[5:]) for line in body.splitlines() if line.startswith("data:")]


def types(events: list[dict[str, Any]]) -> list[str]:
    """The event types, in order."""
    return [e["type"] for e in events]


def text_of(events: list[dict[str, Any]], name: str) -> str:
    """The text every message of the agent `name` streamed."""
    ids = {
        e["messageId"]
        for e in events
        if e["type"] == "TEXT_MESSAGE_START" and e.get("name") == name
    }
    return "".join(
        e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT" and e["messageId"] in ids
    )


def check_order(events: list[dict[str, Any]]) -> None:
    """Assert the rules AG-UI clients enforce on one run's events (as `@ag-ui/client` does).

    Every bracket (text, reasoning span and message, tool call, step, subagent) opens once,
    continues and closes only while open, under the subagent that opened it, and nothing is open
    at RUN_FINISHED. Tool call ids are never reused; every attribution names a started subagent.
    """
    assert events and events[0]["type"] == "RUN_STARTED", "the first event is RUN_STARTED"
    assert events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR"), "the last event ends the run"
    open_: dict[str, dict[str, str | None]] = {
        "text": {},
        "span": {},
        "reasoning": {},
        "tool": {},
    }
    calls: set[str] = set()
    subagents: set[str] = set()
    active: set[str] = set()
    steps: set[tuple[str | None, str]] = set()
    brackets = {
        "TEXT_MESSAGE": ("text", "messageId"),
        "REASONING_MESSAGE": ("reasoning", "messageId"),
        "TOOL_CALL": ("tool", "toolCallId"),
    }
    for index, event in enumerate(events):
        kind, owner = event["type"], event.get("subagentRunId")
        where = f"event {index} ({kind})"
        if kind.startswith("SUBAGENT_"):
            run_id = event["subagentRunId"]
            if kind == "SUBAGENT_STARTED":
                assert run_id not in subagents, f"{where}: subagent {run_id} started twice"
                parent = event.get("parentSubagentRunId")
                assert parent is None or parent in subagents, f"{where}: unknown parent"
                subagents.add(run_id)
                active.add(run_id)
            else:
                assert run_id in active, f"{where}: subagent {run_id} is not active"
                active.discard(run_id)
            continue
        assert owner is None or owner in subagents, f"{where}: unknown subagent {owner}"
        if kind in ("REASONING_START", "REASONING_END"):
            spans = open_["span"]
            message_id = event["messageId"]
            if kind == "REASONING_START":
                assert message_id not in spans, f"{where}: span open twice"
                spans[message_id] = owner
            else:
                assert spans.pop(message_id, "absent") == owner, f"{where}: span not open here"
            continue
        for prefix, (bucket, key) in brackets.items():
            if not kind.startswith(prefix + "_") or kind == "TOOL_CALL_RESULT":
                continue
            store, entity = open_[bucket], event[key]
            if kind.endswith("_START"):
                assert entity not in store, f"{where}: {entity} opened twice"
                if bucket == "tool":
                    assert entity not in calls, f"{where}: tool call id {entity} reused"
                    calls.add(entity)
                store[entity] = owner
            else:
                assert entity in store, f"{where}: {entity} is not open"
                assert store[entity] == owner, f"{where}: {entity} belongs to another subagent"
                if kind.endswith("_END"):
                    del store[entity]
        if kind == "TOOL_CALL_RESULT":
            assert event["toolCallId"] in calls, f"{where}: result of an unknown call"
        elif kind == "STEP_STARTED":
            step = (owner, event["stepName"])
            assert step not in steps, f"{where}: step {step} already active"
            steps.add(step)
        elif kind == "STEP_FINISHED":
            step = (owner, event["stepName"])
            assert step in steps, f"{where}: step {step} is not active"
            steps.discard(step)
    if events[-1]["type"] == "RUN_FINISHED":
        assert not any(open_.values()), f"still open at RUN_FINISHED: {open_}"
        assert not steps and not active, f"still active at RUN_FINISHED: {steps} {active}"
