"""The graph engine: executors joined by edges, run in supersteps, usable as an agent.

Build a graph with `WorkflowBuilder`, run it with `Workflow.run` / `run_stream`, continue it
from a checkpoint with `Workflow.resume` (a workflow agent's turn with `run_from`), or nest it anywhere with `Workflow.as_agent()`.

Example:
    >>> import anyio
    >>> async def double(n, ctx):
    ...     await ctx.send(n * 2)
    >>> async def report(n, ctx):
    ...     await ctx.yield_output(n)
    >>> a, b = FunctionExecutor("double", double), FunctionExecutor("report", report)
    >>> workflow = WorkflowBuilder("calc").add_edge(a, b).set_start(a).build()
    >>> anyio.run(workflow.run, 21).outputs
    [42]
"""

from raf.engine.builder import NodeRef as NodeRef
from raf.engine.builder import WorkflowBuilder as WorkflowBuilder
from raf.engine.context import NodeContext as NodeContext
from raf.engine.edges import Condition as Condition
from raf.engine.edges import Edge as Edge
from raf.engine.events import CheckpointSaved as CheckpointSaved
from raf.engine.events import NodeCompleted as NodeCompleted
from raf.engine.events import NodeFailed as NodeFailed
from raf.engine.events import NodeInvoking as NodeInvoking
from raf.engine.events import NodeStreaming as NodeStreaming
from raf.engine.events import NodeWaiting as NodeWaiting
from raf.engine.events import RequestInfo as RequestInfo
from raf.engine.events import SuperstepCompleted as SuperstepCompleted
from raf.engine.events import WorkflowEvent as WorkflowEvent
from raf.engine.events import WorkflowFailed as WorkflowFailed
from raf.engine.events import WorkflowOutput as WorkflowOutput
from raf.engine.executors import AgentExecutor as AgentExecutor
from raf.engine.executors import Executor as Executor
from raf.engine.executors import FunctionExecutor as FunctionExecutor
from raf.engine.facade import WorkflowAgent as WorkflowAgent
from raf.engine.state import RunStatus as RunStatus
from raf.engine.stream import WorkflowStream as WorkflowStream
from raf.engine.time_travel import run_from as run_from
from raf.engine.workflow import Workflow as Workflow
from raf.engine.workflow import WorkflowResult as WorkflowResult
from raf.errors import CheckpointValueError as CheckpointValueError

__all__ = [
    "AgentExecutor",
    "CheckpointSaved",
    "CheckpointValueError",
    "Condition",
    "Edge",
    "Executor",
    "FunctionExecutor",
    "NodeCompleted",
    "NodeContext",
    "NodeFailed",
    "NodeInvoking",
    "NodeRef",
    "NodeStreaming",
    "NodeWaiting",
    "RequestInfo",
    "RunStatus",
    "SuperstepCompleted",
    "Workflow",
    "WorkflowAgent",
    "WorkflowBuilder",
    "WorkflowFailed",
    "WorkflowEvent",
    "WorkflowOutput",
    "WorkflowResult",
    "WorkflowStream",
    "run_from",
]
