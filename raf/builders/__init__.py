"""Builders of orchestration patterns, each compiled onto the graph engine.

Example:
    >>> from raf import FunctionAgent
    >>> a = FunctionAgent("a", lambda messages: "A")
    >>> SequentialBuilder(id="s").add_agent(a).build().as_agent().metadata.kind
    'sequential'
"""

from raf.builders.concurrent import ConcurrentBuilder as ConcurrentBuilder
from raf.builders.group_chat import GroupChatBuilder as GroupChatBuilder
from raf.builders.group_chat_selectors import EndChat as EndChat
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
from raf.builders.handoff import UnreachableHandoffWarning as UnreachableHandoffWarning
from raf.builders.magentic import MagenticBuilder as MagenticBuilder
from raf.builders.magentic_ledger import LedgerAnswer as LedgerAnswer
from raf.builders.magentic_ledger import LedgerChoice as LedgerChoice
from raf.builders.magentic_ledger import ProgressLedger as ProgressLedger
from raf.builders.magentic_ledger import TaskLedger as TaskLedger
from raf.builders.roles import END as END
from raf.builders.roles import RoleEvent as RoleEvent
from raf.builders.roles import RoleWorkflowBuilder as RoleWorkflowBuilder
from raf.builders.roles import TickRunner as TickRunner
from raf.builders.sequential import SequentialBuilder as SequentialBuilder
from raf.builders.vote import VoteBuilder as VoteBuilder
from raf.builders.vote_ballot import Ballot as Ballot
from raf.builders.vote_ballot import VoteResult as VoteResult
from raf.builders.vote_policy import VotePolicy as VotePolicy
from raf.builders.vote_policy import judge as judge
from raf.builders.vote_policy import majority as majority
from raf.builders.vote_policy import plurality as plurality
from raf.builders.vote_policy import unanimous as unanimous
from raf.builders.vote_policy import weighted as weighted

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
