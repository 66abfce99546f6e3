"""Builders of orchestration patterns, each compiled onto the graph engine.

Example:
    >>> from raf import FunctionAgent
    >>> from raf.builders import SequentialBuilder
    >>> a = FunctionAgent("a", lambda messages: "A")
    >>> SequentialBuilder(id="s").add_agent(a).build().as_agent().metadata.kind
    'sequential'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from raf._lazy import lazy_exports

if TYPE_CHECKING:
    from raf.builders.concurrent import ConcurrentBuilder as ConcurrentBuilder
    from raf.builders.group_chat import AllOf as AllOf
    from raf.builders.group_chat import AnyOf as AnyOf
    from raf.builders.group_chat import ChatProgress as ChatProgress
    from raf.builders.group_chat import EndChat as EndChat
    from raf.builders.group_chat import FunctionCondition as FunctionCondition
    from raf.builders.group_chat import GroupChatBuilder as GroupChatBuilder
    from raf.builders.group_chat import MaxRounds as MaxRounds
    from raf.builders.group_chat import Selector as Selector
    from raf.builders.group_chat import SelectorFn as SelectorFn
    from raf.builders.group_chat import SpeakerChoice as SpeakerChoice
    from raf.builders.group_chat import SpeakerSaid as SpeakerSaid
    from raf.builders.group_chat import TerminationCondition as TerminationCondition
    from raf.builders.group_chat import TextMention as TextMention
    from raf.builders.group_chat import llm_selector as llm_selector
    from raf.builders.group_chat import round_robin as round_robin
    from raf.builders.handoff import HandoffBuilder as HandoffBuilder
    from raf.builders.handoff import UnreachableHandoffWarning as UnreachableHandoffWarning
    from raf.builders.magentic import LedgerAnswer as LedgerAnswer
    from raf.builders.magentic import LedgerChoice as LedgerChoice
    from raf.builders.magentic import MagenticBuilder as MagenticBuilder
    from raf.builders.magentic import ProgressLedger as ProgressLedger
    from raf.builders.magentic import TaskLedger as TaskLedger
    from raf.builders.roles import END as END
    from raf.builders.roles import RoleEvent as RoleEvent
    from raf.builders.roles import RoleWorkflowBuilder as RoleWorkflowBuilder
    from raf.builders.roles import TickRunner as TickRunner
    from raf.builders.sequential import SequentialBuilder as SequentialBuilder
    from raf.builders.vote import Ballot as Ballot
    from raf.builders.vote import VoteBuilder as VoteBuilder
    from raf.builders.vote import VotePolicy as VotePolicy
    from raf.builders.vote import VoteResult as VoteResult
    from raf.builders.vote import judge as judge
    from raf.builders.vote import majority as majority
    from raf.builders.vote import plurality as plurality
    from raf.builders.vote import unanimous as unanimous
    from raf.builders.vote import weighted as weighted

# Each builder loads on first use: a sequential workflow does not load the other patterns
# (nor the adapters, the stores and the JSON readers some of them use).
_LAZY: dict[str, str] = {
    "ConcurrentBuilder": "raf.builders.concurrent",
    "AllOf": "raf.builders.group_chat",
    "AnyOf": "raf.builders.group_chat",
    "ChatProgress": "raf.builders.group_chat",
    "EndChat": "raf.builders.group_chat",
    "FunctionCondition": "raf.builders.group_chat",
    "GroupChatBuilder": "raf.builders.group_chat",
    "MaxRounds": "raf.builders.group_chat",
    "Selector": "raf.builders.group_chat",
    "SelectorFn": "raf.builders.group_chat",
    "SpeakerChoice": "raf.builders.group_chat",
    "SpeakerSaid": "raf.builders.group_chat",
    "TerminationCondition": "raf.builders.group_chat",
    "TextMention": "raf.builders.group_chat",
    "llm_selector": "raf.builders.group_chat",
    "round_robin": "raf.builders.group_chat",
    "HandoffBuilder": "raf.builders.handoff",
    "UnreachableHandoffWarning": "raf.builders.handoff",
    "LedgerAnswer": "raf.builders.magentic",
    "LedgerChoice": "raf.builders.magentic",
    "MagenticBuilder": "raf.builders.magentic",
    "ProgressLedger": "raf.builders.magentic",
    "TaskLedger": "raf.builders.magentic",
    "END": "raf.builders.roles",
    "RoleEvent": "raf.builders.roles",
    "RoleWorkflowBuilder": "raf.builders.roles",
    "TickRunner": "raf.builders.roles",
    "SequentialBuilder": "raf.builders.sequential",
    "Ballot": "raf.builders.vote",
    "VoteBuilder": "raf.builders.vote",
    "VotePolicy": "raf.builders.vote",
    "VoteResult": "raf.builders.vote",
    "judge": "raf.builders.vote",
    "majority": "raf.builders.vote",
    "plurality": "raf.builders.vote",
    "unanimous": "raf.builders.vote",
    "weighted": "raf.builders.vote",
}

__getattr__, __dir__ = lazy_exports(globals(), _LAZY)

__all__ = [
    "AllOf",
    "AnyOf",
    "ChatProgress",
    "ConcurrentBuilder",
    "EndChat",
    "FunctionCondition",
    "GroupChatBuilder",
    "HandoffBuilder",
    "MaxRounds",
    "Selector",
    "SelectorFn",
    "SequentialBuilder",
    "SpeakerChoice",
    "SpeakerSaid",
    "TerminationCondition",
    "TextMention",
    "UnreachableHandoffWarning",
    "llm_selector",
    "round_robin",
    "Ballot",
    "LedgerAnswer",
    "LedgerChoice",
    "MagenticBuilder",
    "ProgressLedger",
    "TaskLedger",
    "VoteBuilder",
    "VotePolicy",
    "VoteResult",
    "judge",
    "majority",
    "plurality",
    "unanimous",
    "weighted",
    "END",
    "RoleEvent",
    "RoleWorkflowBuilder",
    "TickRunner",
]
