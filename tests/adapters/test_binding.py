from __future__ import annotations

from typing import TypeVar

import pytest
from pydantic import BaseModel

from raf.adapters import AdapterBinding, AdapterFn, RoleFn, ThreadContext

pytestmark = pytest.mark.anyio

M = TypeVar("M", bound=BaseModel)


class Note(BaseModel):
    text: str


def fixed(label: str) -> AdapterFn:
    def adapter(prompt: str, schema: type[M], /) -> RoleFn[M]:
        async def role(thread: ThreadContext) -> M:
            return schema.model_validate({"text": f"{label}:{prompt}:{thread.thread_id}"})

        return role

    return adapter


async def test_overrides_pick_the_adapter_per_role() -> None:
    default, special = fixed("default"), fixed("special")
    binding = AdapterBinding(default, overrides={"critic": special})
    assert binding.adapter_for("writer") is default
    assert binding.adapter_for("critic") is special
    thread = ThreadContext(thread_id="t9")
    assert await binding.bind("critic", "Critique.", Note)(thread) == Note(
        text="special:Critique.:t9"
    )
    assert await binding.bind("writer", "Write.", Note)(thread) == Note(text="default:Write.:t9")


def test_overrides_are_copied_and_read_only() -> None:
    overrides = {"critic": fixed("special")}
    binding = AdapterBinding(fixed("default"), overrides)
    overrides["writer"] = fixed("late")
    assert "writer" not in binding.overrides
    with pytest.raises(TypeError):
        binding.overrides["writer"] = fixed("x")  # type: ignore[index]
    assert AdapterBinding(fixed("d")).overrides == {}
