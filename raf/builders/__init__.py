"""Builders of orchestration patterns, each compiled onto the graph engine.

Example:
    >>> from raf import FunctionAgent
    >>> a = FunctionAgent("a", lambda messages: "A")
    >>> SequentialBuilder(id="s").add_agent(a).build().as_agent().metadata.kind
    'sequential'
"""

from raf.builders.concurrent import ConcurrentBuilder as ConcurrentBuilder
from raf.builders.group_chat import GroupChatBuilder as GroupChatBuilder
from raf.builders.group_chat_selectors import Selector as Selector
from raf.builders.group_chat_selectors import SelectorFn as SelectorFn
from raf.builders.group_chat_selectors import SpeakerChoice as SpeakerChoice
from raf.builders.group_chat_selectors import llm_selector as llm_selector
from raf.builders.group_chat_selectors import round_robin as round_robin
from raf.builders.group_chat_termination import AllOf as AllOf
from raf.builders.group_chat_termination import AnyOf as AnyOf
from raf.builders.group_chat_termination import ChatProgress as ChatProgress
from raf.builders.group_chat_termination import FunctionCondition as FunctionCondition
from raf.builders.group_chat_termination import MaxRounds as MaxRounds
from raf.builders.group_chat_termination import SpeakerSaid as SpeakerSaid
from raf.builders.group_chat_termination import TerminationCondition as TerminationCondition
from raf.builders.group_chat_termination import TextMention as TextMention
from raf.builders.handoff import HandoffBuilder as HandoffBuilder
from raf.builders.roles import END as END
from raf.builders.roles import RoleEvent as RoleEvent
from raf.builders.roles import RoleWorkflowBuilder as RoleWorkflowBuilder
from raf.builders.roles import TickRunner as TickRunner
from raf.builders.sequential import SequentialBuilder as SequentialBuilder

__all__ = [
    "AllOf",
    "AnyOf",
    "ChatProgress",
    "ConcurrentBuilder",
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
    "llm_selector",
    "round_robin",
    "END",
    "RoleEvent",
    "RoleWorkflowBuilder",
    "TickRunner",
]
