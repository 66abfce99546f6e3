"""`WorkflowStream`: the events of a run, through one bounded buffer.

`async with workflow.run_stream(x) as events: async for event in events: ...`. The run's task
group lives in the context manager; leaving the block early cancels the run. Node failures
arrive as events; an error of the run itself (say, resuming with a bad checkpoint id) is raised
from the iterator after the events produced before it.
"""

from __future__ import annotations

from raf._streaming import ProducerStream
from raf.engine.events import WorkflowEvent

__all__ = ["WorkflowStream"]


class WorkflowStream(ProducerStream[WorkflowEvent, object]):
    """A streamed workflow run: `async with` it to iterate its events.

    Example:
        >>> async def show(workflow):
        ...     async with workflow.run_stream("hi") as events:
        ...         async for event in events:
        ...             print(type(event).__name__)
    """

    __slots__ = ()

    misuse = (
        "a workflow stream is iterated inside its context manager: write "
        "`async with workflow.run_stream(input) as events: async for event in events: ...`"
    )
