"""Group chat: participants take turns in one shared transcript, a selector choosing.

`builder` compiles the chat (`GroupChatBuilder`), `selectors` chooses who speaks next
(`round_robin`, `llm_selector`, your own `Selector` or function, `EndChat`), and `termination`
says when the chat is done (`MaxRounds`, `TextMention`, `SpeakerSaid`, combined with `|` and `&`).
"""

from raf.builders.group_chat.builder import GroupChatBuilder as GroupChatBuilder
from raf.builders.group_chat.selectors import EndChat as EndChat
from raf.builders.group_chat.selectors import Selector as Selector
from raf.builders.group_chat.selectors import SelectorFn as SelectorFn
from raf.builders.group_chat.selectors import SpeakerChoice as SpeakerChoice
from raf.builders.group_chat.selectors import llm_selector as llm_selector
from raf.builders.group_chat.selectors import round_robin as round_robin
from raf.builders.group_chat.termination import AllOf as AllOf
from raf.builders.group_chat.termination import AnyOf as AnyOf
from raf.builders.group_chat.termination import ChatProgress as ChatProgress
from raf.builders.group_chat.termination import FunctionCondition as FunctionCondition
from raf.builders.group_chat.termination import MaxRounds as MaxRounds
from raf.builders.group_chat.termination import SpeakerSaid as SpeakerSaid
from raf.builders.group_chat.termination import TerminationCondition as TerminationCondition
from raf.builders.group_chat.termination import TextMention as TextMention

__all__ = [
    "AllOf",
    "AnyOf",
    "ChatProgress",
    "EndChat",
    "FunctionCondition",
    "GroupChatBuilder",
    "MaxRounds",
    "Selector",
    "SelectorFn",
    "SpeakerChoice",
    "SpeakerSaid",
    "TerminationCondition",
    "TextMention",
    "llm_selector",
    "round_robin",
]
