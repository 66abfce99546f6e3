"""Plan review: the request a human gets about a task ledger, and how their answer reads.

Approvals are read as people write them: "approve", "Approved.", "yes", "LGTM", "looks good
to me", `{"approved": true}`, or the request's choice `{"choice": "approve"}`. Anything else
is a revision, which the manager folds into the plan.

Example:
    >>> revision_in("LGTM!") is None, revision_in({"approved": True}) is None
    (True, True)
    >>> revision_in("Ask the researcher first.")
    'Ask the researcher first.'
"""

from __future__ import annotations

import json
import re
from typing import Any, cast

from raf.builders.magentic.ledger import TaskLedger

__all__ = ["CHOICES", "REVIEWS", "review_payload", "revision_in"]

REVIEWS = 5
"""Revisions of one plan asked for before the last revised plan is taken as it is."""

CHOICES = ("approve", "revise")
"""The choices a plan review offers (a revision is best given with its text)."""

_YES = frozenset(
    {
        "approve",
        "approved",
        "approves",
        "yes",
        "yep",
        "yeah",
        "yup",
        "ok",
        "okay",
        "lgtm",
        "good",
        "fine",
        "great",
        "perfect",
        "sure",
        "accept",
        "accepted",
        "agree",
        "agreed",
        "proceed",
        "go",
    }
)
_FILLER = frozenset(
    {
        "looks",
        "look",
        "sounds",
        "to",
        "me",
        "it",
        "the",
        "plan",
        "is",
        "this",
        "that",
        "s",
        "please",
        "thanks",
        "thank",
        "you",
        "ahead",
    }
)
_MARKS = frozenset("👍✅✔️")
_REVISION_KEYS = ("revision", "feedback", "comments", "comment", "edited_plan", "plan")
_CHOICE_KEYS = ("choice", "decision", "answer")


def review_payload(ledger: TaskLedger) -> dict[str, Any]:
    """What the human is asked: the ledger, the choices, and how to answer."""
    return {
        "type": "plan_review",
        "facts": ledger.facts,
        "plan": ledger.plan,
        "choices": list(CHOICES),
        "hint": 'answer "approve" (or yes, LGTM, {"approved": true}), or with your revision',
    }


def revision_in(answer: Any) -> str | None:
    """None when the human approved; otherwise their revision as text."""
    if isinstance(answer, bool):
        return None if answer else "The plan is not approved: make a better one."
    if isinstance(answer, str):
        return _read_text(answer)
    if isinstance(answer, dict):
        return _read_fields(cast(dict[str, Any], answer))
    return json.dumps(answer)


def _read_text(answer: str) -> str | None:
    text = answer.strip()
    if text.startswith(("{", "true", "false")):
        try:
            parsed = json.loads(text)
        except ValueError:
            pass
        else:
            if isinstance(parsed, dict | bool):
                return revision_in(parsed)
    if _approves(text):
        return None
    return text


def _read_fields(fields: dict[str, Any]) -> str | None:
    revision = next(
        (str(fields[k]) for k in _REVISION_KEYS if isinstance(fields.get(k), str) and fields[k]),
        None,
    )
    approved = fields.get("approved")
    if approved is True:
        return None
    choice = next((fields[k] for k in _CHOICE_KEYS if isinstance(fields.get(k), str)), None)
    if approved is None and revision is None and isinstance(choice, str) and _approves(choice):
        return None
    if revision is not None:
        return revision
    if approved is False or choice is not None:
        return "The plan is not approved: make a better one."
    return json.dumps(fields)


def _approves(text: str) -> bool:
    """Whether `text` says yes and nothing else ("Approve.", "LGTM", "ok, go ahead")."""
    if text and all(c in _MARKS or c.isspace() for c in text):
        return True
    words = re.findall(r"[a-z]+", text.lower())
    return (
        bool(words)
        and len(words) <= 6
        and all(w in _YES or w in _FILLER for w in words)
        and any(w in _YES for w in words)
    )
