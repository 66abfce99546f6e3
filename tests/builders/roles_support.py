"""Roles shared by the role workflow tests: a writer and a reviewer on a scripted adapter."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from raf.adapters import AdapterBinding, ThreadContext
from raf.builders import END, RoleEvent, RoleWorkflowBuilder

M = TypeVar("M", bound=BaseModel)


class Draft(BaseModel):
    text: str


class Review(BaseModel):
    approved: bool
    notes: str = ""


class Counting:
    """An adapter whose roles answer from the thread, counting how often each role ran."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.threads: list[ThreadContext] = []

    def __call__(self, prompt: str, schema: type[M], /) -> Callable[[ThreadContext], Awaitable[M]]:
        async def role(thread: ThreadContext) -> M:
            self.calls[prompt] = self.calls.get(prompt, 0) + 1
            self.threads.append(thread)
            drafts = sum(1 for step in thread.steps if step.role == "writer")
            if schema is Draft:
                return schema.model_validate({"text": f"draft {drafts + 1}"})
            # The reviewer approves the second draft.
            return schema.model_validate({"approved": drafts >= 2, "notes": f"saw {drafts}"})

        return role


def review_moderator(chain: list[RoleEvent], topic_id: str) -> Any:
    """writer, reviewer, writer, reviewer (approves), END."""
    last = chain[-1]
    if last.role == "__start__":
        return "writer"
    if last.role == "writer":
        return "reviewer"
    return END if last.meta["approved"] else "writer"


REVIEW_KINDS = [
    "review.__start__",
    "review.writer",
    "review.reviewer",
    "review.writer",
    "review.reviewer",
]
"""The kinds of a whole thread of the review workflow."""


def review_builder() -> RoleWorkflowBuilder:
    return (
        RoleWorkflowBuilder("review")
        .add_role("writer", "write", Draft)
        .add_role("reviewer", "review", Review)
        .with_moderator(review_moderator)
    )


def counting_binding() -> tuple[AdapterBinding, Counting]:
    adapter = Counting()
    return AdapterBinding(adapter), adapter
