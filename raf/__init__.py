"""raf: compose agents into workflows, where every workflow is itself an agent.

The package is layered: the agent contract (`raf.agent`, `raf.messages`, `raf.updates`,
`raf.errors`) at the core; leaf agents (`raf.react`), tools and providers on it; the graph engine
(`raf.engine`) under every builder (`raf.builders`); stores, the registry and the fronts on top.
This module pulls together the public API. `openai` and `networkx` load only when used.

Example:
    >>> import anyio
    >>> import raf
    >>> a = raf.FunctionAgent("a", lambda messages: "hello")
    >>> b = raf.FunctionAgent("b", lambda messages: messages[-1].text + " world")
    >>> team = raf.SequentialBuilder(id="team").add_agent(a).add_agent(b).build().as_agent()
    >>> anyio.run(team.run("hi").collect).text
    'hello world'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from raf._lazy import lazy_exports
from raf.agent import AgentMetadata as AgentMetadata
from raf.agent import AgentRun as AgentRun
from raf.agent import IAgent as IAgent
from raf.agent import RunOptions as RunOptions
from raf.agent import Session as Session
from raf.budget import Budget as Budget
from raf.errors import AgentError as AgentError
from raf.errors import AppendConflict as AppendConflict
from raf.errors import BudgetExceeded as BudgetExceeded
from raf.errors import CheckpointError as CheckpointError
from raf.errors import GraphValidationError as GraphValidationError
from raf.errors import HandoffLimitExceeded as HandoffLimitExceeded
from raf.errors import MaxRoundsExceeded as MaxRoundsExceeded
from raf.errors import ProviderError as ProviderError
from raf.errors import QuorumNotReached as QuorumNotReached
from raf.errors import RoleStepFailed as RoleStepFailed
from raf.errors import RunTimeout as RunTimeout
from raf.errors import SchemaValidationError as SchemaValidationError
from raf.errors import SessionBusy as SessionBusy
from raf.errors import SessionConflict as SessionConflict
from raf.errors import SessionLockLost as SessionLockLost
from raf.errors import ToolError as ToolError
from raf.errors import UnansweredCalls as UnansweredCalls
from raf.errors import UnknownRequest as UnknownRequest
from raf.errors import WorkflowError as WorkflowError
from raf.function_agent import FunctionAgent as FunctionAgent
from raf.messages import ChatMessage as ChatMessage
from raf.messages import Content as Content
from raf.messages import ReasoningContent as ReasoningContent
from raf.messages import TextContent as TextContent
from raf.messages import ToolCallContent as ToolCallContent
from raf.messages import ToolResultContent as ToolResultContent
from raf.pending import PendingRequest as PendingRequest
from raf.traced import install_telemetry as _install_telemetry
from raf.tracing.settings import active as _active_telemetry
from raf.updates import AgentResponse as AgentResponse
from raf.updates import AgentUpdate as AgentUpdate
from raf.updates import ExecutorInvoked as ExecutorInvoked
from raf.updates import ExecutorInvoking as ExecutorInvoking
from raf.updates import MessageCompleted as MessageCompleted
from raf.updates import ReasoningDelta as ReasoningDelta
from raf.updates import RequestInfoUpdate as RequestInfoUpdate
from raf.updates import TextDelta as TextDelta
from raf.updates import ToolCallArgs as ToolCallArgs
from raf.updates import ToolCalled as ToolCalled
from raf.updates import ToolCallEnd as ToolCallEnd
from raf.updates import ToolCallStart as ToolCallStart
from raf.updates import Usage as Usage

if TYPE_CHECKING:
    __version__: str
    """The installed version of raf."""
    from raf.adapters import AdapterBinding as AdapterBinding
    from raf.adapters import AdapterFn as AdapterFn
    from raf.adapters import ResultAdapterFn as ResultAdapterFn
    from raf.adapters import RoleFn as RoleFn
    from raf.adapters import RoleResult as RoleResult
    from raf.adapters import Step as Step
    from raf.adapters import ThreadContext as ThreadContext
    from raf.adapters import agent_to_adapter as agent_to_adapter
    from raf.adapters import create_command_role as create_command_role
    from raf.adapters import create_llm_adapter as create_llm_adapter
    from raf.adapters import create_react_adapter as create_react_adapter
    from raf.adapters import create_tool_role as create_tool_role
    from raf.builders import END as END
    from raf.builders import Ballot as Ballot
    from raf.builders import ConcurrentBuilder as ConcurrentBuilder
    from raf.builders import EndChat as EndChat
    from raf.builders import FunctionCondition as FunctionCondition
    from raf.builders import GroupChatBuilder as GroupChatBuilder
    from raf.builders import HandoffBuilder as HandoffBuilder
    from raf.builders import LedgerAnswer as LedgerAnswer
    from raf.builders import LedgerChoice as LedgerChoice
    from raf.builders import MagenticBuilder as MagenticBuilder
    from raf.builders import MaxRounds as MaxRounds
    from raf.builders import ProgressLedger as ProgressLedger
    from raf.builders import RoleEvent as RoleEvent
    from raf.builders import RoleWorkflowBuilder as RoleWorkflowBuilder
    from raf.builders import SequentialBuilder as SequentialBuilder
    from raf.builders import SpeakerSaid as SpeakerSaid
    from raf.builders import TaskLedger as TaskLedger
    from raf.builders import TerminationCondition as TerminationCondition
    from raf.builders import TextMention as TextMention
    from raf.builders import TickRunner as TickRunner
    from raf.builders import UnreachableHandoffWarning as UnreachableHandoffWarning
    from raf.builders import VoteBuilder as VoteBuilder
    from raf.builders import VotePolicy as VotePolicy
    from raf.builders import VoteResult as VoteResult
    from raf.builders import judge as judge
    from raf.builders import llm_selector as llm_selector
    from raf.builders import majority as majority
    from raf.builders import plurality as plurality
    from raf.builders import round_robin as round_robin
    from raf.builders import unanimous as unanimous
    from raf.builders import weighted as weighted
    from raf.engine import AgentExecutor as AgentExecutor
    from raf.engine import Executor as Executor
    from raf.engine import FunctionExecutor as FunctionExecutor
    from raf.engine import NodeContext as NodeContext
    from raf.engine import Workflow as Workflow
    from raf.engine import WorkflowAgent as WorkflowAgent
    from raf.engine import WorkflowBuilder as WorkflowBuilder
    from raf.engine import WorkflowResult as WorkflowResult
    from raf.engine.codec import register_model as register_model
    from raf.providers.base import LlmProvider as LlmProvider
    from raf.providers.openai import OpenAIProvider as OpenAIProvider
    from raf.providers.openai import create_client as create_client
    from raf.providers.retry import RetryPolicy as RetryPolicy
    from raf.react import ReactAgent as ReactAgent
    from raf.registry import AgentRegistry as AgentRegistry
    from raf.registry import AgentTree as AgentTree
    from raf.registry import walk as walk
    from raf.stores import Checkpoint as Checkpoint
    from raf.stores import CheckpointStore as CheckpointStore
    from raf.stores import EventLog as EventLog
    from raf.stores import MemoryCheckpointStore as MemoryCheckpointStore
    from raf.stores import PostgresCheckpointStore as PostgresCheckpointStore
    from raf.stores import SessionLock as SessionLock
    from raf.stores import SessionLocking as SessionLocking
    from raf.stores import SqliteCheckpointStore as SqliteCheckpointStore
    from raf.stores import StoredEvent as StoredEvent
    from raf.tools import Tool as Tool
    from raf.tools import ToolDefinition as ToolDefinition
    from raf.tools import Workspace as Workspace
    from raf.tools import tool as tool
    from raf.tools import tool_handler as tool_handler
    from raf.tools import workspace_tools as workspace_tools
    from raf.tools.mcp import mcp_tools as mcp_tools

# Everything past the agent contract loads on first use, so `import raf` stays fast.
_LAZY: dict[str, str] = {
    "AdapterBinding": "raf.adapters",
    "AdapterFn": "raf.adapters",
    "AgentExecutor": "raf.engine",
    "AgentRegistry": "raf.registry",
    "AgentTree": "raf.registry",
    "Ballot": "raf.builders",
    "Checkpoint": "raf.stores",
    "CheckpointStore": "raf.stores",
    "ConcurrentBuilder": "raf.builders",
    "FunctionCondition": "raf.builders",
    "GroupChatBuilder": "raf.builders",
    "HandoffBuilder": "raf.builders",
    "EndChat": "raf.builders",
    "UnreachableHandoffWarning": "raf.builders",
    "MaxRounds": "raf.builders",
    "SpeakerSaid": "raf.builders",
    "TerminationCondition": "raf.builders",
    "TextMention": "raf.builders",
    "llm_selector": "raf.builders",
    "round_robin": "raf.builders",
    "Executor": "raf.engine",
    "FunctionExecutor": "raf.engine",
    "LedgerAnswer": "raf.builders",
    "LedgerChoice": "raf.builders",
    "LlmProvider": "raf.providers.base",
    "MagenticBuilder": "raf.builders",
    "MemoryCheckpointStore": "raf.stores",
    "NodeContext": "raf.engine",
    "OpenAIProvider": "raf.providers.openai",
    "PostgresCheckpointStore": "raf.stores",
    "ProgressLedger": "raf.builders",
    "ReactAgent": "raf.react",
    "RetryPolicy": "raf.providers.retry",
    "RoleFn": "raf.adapters",
    "RoleResult": "raf.adapters",
    "ResultAdapterFn": "raf.adapters",
    "SequentialBuilder": "raf.builders",
    "SessionLock": "raf.stores",
    "SessionLocking": "raf.stores",
    "SqliteCheckpointStore": "raf.stores",
    "Step": "raf.adapters",
    "TaskLedger": "raf.builders",
    "ThreadContext": "raf.adapters",
    "Tool": "raf.tools",
    "ToolDefinition": "raf.tools",
    "VoteBuilder": "raf.builders",
    "VotePolicy": "raf.builders",
    "VoteResult": "raf.builders",
    "Workflow": "raf.engine",
    "WorkflowAgent": "raf.engine",
    "WorkflowBuilder": "raf.engine",
    "WorkflowResult": "raf.engine",
    "agent_to_adapter": "raf.adapters",
    "create_client": "raf.providers.openai",
    "create_llm_adapter": "raf.adapters",
    "create_command_role": "raf.adapters",
    "create_tool_role": "raf.adapters",
    "create_react_adapter": "raf.adapters",
    "judge": "raf.builders",
    "majority": "raf.builders",
    "plurality": "raf.builders",
    "unanimous": "raf.builders",
    "weighted": "raf.builders",
    "tool": "raf.tools",
    "Workspace": "raf.tools",
    "workspace_tools": "raf.tools",
    "walk": "raf.registry",
    "register_model": "raf.engine.codec",
    "END": "raf.builders",
    "EventLog": "raf.stores",
    "RoleEvent": "raf.builders",
    "RoleWorkflowBuilder": "raf.builders",
    "StoredEvent": "raf.stores",
    "TickRunner": "raf.builders",
    "mcp_tools": "raf.tools.mcp",
    "tool_handler": "raf.tools",
}


_lazy_getattr, __dir__ = lazy_exports(globals(), _LAZY)

# Whether a run is traced is decided above the core (`raf.tracing`), which the core may not
# import: the package, which runs before any module of it, wires the decision in here.
_install_telemetry(_active_telemetry)


def __getattr__(name: str) -> Any:
    """Load a public name on first use; `__version__` from the installed package's metadata."""
    if name == "__version__":
        from importlib.metadata import version

        globals()[name] = value = version("raf")
        return value
    return _lazy_getattr(name)


__all__ = [
    "AdapterBinding",
    "AdapterFn",
    "AgentError",
    "AgentExecutor",
    "AppendConflict",
    "AgentMetadata",
    "AgentRegistry",
    "AgentResponse",
    "AgentRun",
    "AgentTree",
    "AgentUpdate",
    "Ballot",
    "Budget",
    "BudgetExceeded",
    "ChatMessage",
    "Checkpoint",
    "CheckpointStore",
    "ConcurrentBuilder",
    "Content",
    "Executor",
    "ExecutorInvoked",
    "ExecutorInvoking",
    "FunctionAgent",
    "FunctionCondition",
    "FunctionExecutor",
    "GraphValidationError",
    "GroupChatBuilder",
    "HandoffBuilder",
    "HandoffLimitExceeded",
    "EndChat",
    "UnreachableHandoffWarning",
    "IAgent",
    "LedgerAnswer",
    "LedgerChoice",
    "LlmProvider",
    "MaxRounds",
    "MagenticBuilder",
    "MaxRoundsExceeded",
    "MemoryCheckpointStore",
    "MessageCompleted",
    "NodeContext",
    "OpenAIProvider",
    "PendingRequest",
    "PostgresCheckpointStore",
    "ProgressLedger",
    "ProviderError",
    "QuorumNotReached",
    "ResultAdapterFn",
    "ReactAgent",
    "ReasoningContent",
    "ReasoningDelta",
    "RequestInfoUpdate",
    "RetryPolicy",
    "RoleFn",
    "RoleResult",
    "RoleStepFailed",
    "RunOptions",
    "RunTimeout",
    "SchemaValidationError",
    "SequentialBuilder",
    "Session",
    "SessionBusy",
    "SessionConflict",
    "SessionLockLost",
    "SpeakerSaid",
    "SqliteCheckpointStore",
    "Step",
    "TerminationCondition",
    "TaskLedger",
    "TextContent",
    "TextDelta",
    "TextMention",
    "ThreadContext",
    "Tool",
    "ToolCallArgs",
    "ToolCallContent",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolCalled",
    "ToolDefinition",
    "ToolError",
    "ToolResultContent",
    "UnansweredCalls",
    "UnknownRequest",
    "Usage",
    "VoteBuilder",
    "VotePolicy",
    "VoteResult",
    "Workflow",
    "WorkflowAgent",
    "WorkflowBuilder",
    "WorkflowError",
    "WorkflowResult",
    "Workspace",
    "agent_to_adapter",
    "create_client",
    "create_command_role",
    "create_llm_adapter",
    "create_react_adapter",
    "create_tool_role",
    "llm_selector",
    "round_robin",
    "judge",
    "majority",
    "plurality",
    "tool",
    "unanimous",
    "walk",
    "weighted",
    "workspace_tools",
    "register_model",
    "CheckpointError",
    "END",
    "EventLog",
    "RoleEvent",
    "RoleWorkflowBuilder",
    "StoredEvent",
    "SessionLock",
    "SessionLocking",
    "TickRunner",
    "mcp_tools",
    "tool_handler",
]
