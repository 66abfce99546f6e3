"""Handoff: one agent at a time answers, and may hand the conversation to another.

`builder` compiles it (`HandoffBuilder`, `ResumeAt`) and warns of agents no handoff reaches
(`UnreachableHandoffWarning`).
"""

from raf.builders.handoff.builder import HandoffBuilder as HandoffBuilder
from raf.builders.handoff.builder import ResumeAt as ResumeAt
from raf.builders.handoff.builder import UnreachableHandoffWarning as UnreachableHandoffWarning

__all__ = ["HandoffBuilder", "ResumeAt", "UnreachableHandoffWarning"]
