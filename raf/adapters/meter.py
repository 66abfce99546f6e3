"""`CallMeter`: the provider events of model calls made outside a ReAct loop, as run items.

A structured call (a role's answer, a Magentic ledger) streams its reasoning, and its text
when asked, on a path of the run; each call is charged to the run's budget as one model call
and its tokens, which also go out as a `Usage` item. A provider that sends no usage report
still counts its completion's tokens.

Example:
    >>> from raf.run import RunContext, discard
    >>> from raf.session import Session
    >>> from raf.agent import default_options
    >>> meter = CallMeter(RunContext(("team", "judge"), Session(), default_options(), discard))
    >>> meter.usage().total_tokens
    0
"""

from __future__ import annotations

from raf.providers.base import Completion, ProviderEvent, ReasoningChunk, TextChunk, UsageReport
from raf.run import RunContext
from raf.updates import AgentPath, ReasoningDelta, TextDelta, Usage

__all__ = ["CallMeter"]


class CallMeter:
    """Streams calls' deltas on `path` (the context's own by default) and counts their tokens.

    Args:
        ctx: the run context the calls are made in (its budget, where items go).
        path: the path the items carry.
        text: whether text deltas stream too (a structured answer's JSON, say).
    """

    __slots__ = ("_reported", "ctx", "input_tokens", "output_tokens", "path", "text")

    def __init__(self, ctx: RunContext, path: AgentPath | None = None, *, text: bool = False):
        self.ctx = ctx
        self.path: AgentPath = ctx.path if path is None else path
        self.text = text
        self.input_tokens = 0
        self.output_tokens = 0
        self._reported = False

    def charge(self) -> None:
        """Count the next call against the run's budget (call once before each call)."""
        self.ctx.charge_round()
        self._reported = False

    async def on_event(self, event: ProviderEvent) -> None:
        """Send one provider event of the current call on as the run's items."""
        ctx = self.ctx
        if isinstance(event, ReasoningChunk):
            await ctx.emit(ReasoningDelta(text=event.text, path=self.path))
        elif isinstance(event, TextChunk):
            if self.text:
                await ctx.emit(TextDelta(text=event.text, path=self.path))
        elif isinstance(event, UsageReport) or (
            isinstance(event, Completion)
            and not self._reported
            and (event.input_tokens or event.output_tokens)
        ):
            await self._count(event.input_tokens, event.output_tokens)

    async def _count(self, input_tokens: int, output_tokens: int) -> None:
        self._reported = True
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        await self.ctx.emit(
            Usage(input_tokens=input_tokens, output_tokens=output_tokens, path=self.path)
        )
        self.ctx.charge_tokens(input_tokens + output_tokens)

    def usage(self) -> Usage:
        """The tokens of every call so far."""
        return Usage(input_tokens=self.input_tokens, output_tokens=self.output_tokens)
