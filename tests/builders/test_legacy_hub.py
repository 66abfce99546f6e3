"""Checkpoints and waiting sessions written before handoff, group chat and Magentic shared one
hub (commit e874e42, `data/legacy_hub.json`) resume on the hub to the answers they gave then."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from raf import Session
from raf.builders._hub import Floor
from raf.engine.codec import decode, encode
from raf.messages import ChatMessage
from raf.stores import Checkpoint, MemoryCheckpointStore
from tests.builders.legacy_hub import ANSWER, CHECKPOINTED, WAITING, texts

pytestmark = pytest.mark.anyio

LEGACY: dict[str, Any] = json.loads(
    (Path(__file__).parent / "data" / "legacy_hub.json").read_text()
)


def _middles(name: str) -> list[int]:
    return list(range(len(LEGACY["checkpointed"][name]["checkpoints"]) - 1))


@pytest.mark.parametrize(
    ("name", "index"), [(name, i) for name in CHECKPOINTED for i in _middles(name)]
)
async def test_a_checkpoint_from_before_the_hub_resumes_to_the_same_answer(
    name: str, index: int
) -> None:
    kept = LEGACY["checkpointed"][name]
    store = MemoryCheckpointStore()
    for data in kept["checkpoints"]:
        await store.save(Checkpoint.model_validate(data))
    checkpoint = Checkpoint.model_validate(kept["checkpoints"][index])
    resumed = await CHECKPOINTED[name]().resume(
        checkpoint.id, store, session=Session(id=name, store=store)
    )
    assert resumed.status == "completed"
    assert texts(resumed.outputs[-1]) == kept["answer"]


@pytest.mark.parametrize("name", list(WAITING))
async def test_a_session_waiting_from_before_the_hub_takes_its_answer(name: str) -> None:
    kept = LEGACY["waiting"][name]
    session = Session.from_json(kept["session"])
    done = await WAITING[name]().as_agent().run(ANSWER, session).collect()
    assert done.status == "completed"
    assert texts(done.messages) == kept["answer"]


async def test_a_floor_checkpoints_as_itself() -> None:
    CHECKPOINTED["handoff"]().declare_models()
    floor = Floor(conversation=[ChatMessage.user("hi")], start=1, trail=["triage"], said=-1)
    assert decode(json.loads(json.dumps(encode(floor, "a floor")))) == floor
