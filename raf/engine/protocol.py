"""The run protocol of workflows run as agents: nested runs, waiting, answering, resuming.

One turn, as the agent tree sees it:

    ask      a node calls `ctx.request_info(payload)`; its handling stops, the request
             (id `"{workflow path}/{node}@{superstep}#{n}"`) streams out, and the workflow's
             response is `waiting`, with the messages its agents produced so far; a parent
             node that ran it waits on the same ids, up to the root;
    wait     every waiting workflow agent keeps its engine state in the session (`Waiting`,
             under `"{agent path}#pending"`); an agent that is not raf's keeps its own session
             (`"{agent path}#foreign"`); the root writes the turn's messages into the history;
    answer   the next `run()` on the session: its messages answer the open requests (text the
             oldest, in stream order; a tool result the one it names); the answers enter the
             history as user messages, after what the waiting turn produced;
    resume   each waiting level re-runs the handlings whose requests are all answered, from
             their start; `request_info` returns the answer; nothing completed runs again.

`Turn` (in `raf.run`) carries the answers and the outermost run (`RootRun`, the only one that
saves checkpoints) down the tree; the `Runner` only schedules supersteps and calls the
`Progress` this module gives it after each one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from raf._defaults import new_list
from raf.agent import refuse_stray_results
from raf.engine.checkpointing import decode_state, encode_state, save_checkpoint
from raf.engine.children import CLIENT_WAIT, FOREIGN, RUNNING, WAITING, key_of, text_of
from raf.engine.codec import decode, encode
from raf.engine.events import CheckpointSaved, WorkflowFailed
from raf.engine.mapping import AgentSink, is_messages
from raf.engine.runner import Runner
from raf.engine.state import RunState, RunStatus
from raf.errors import CheckpointValueError
from raf.messages import ChatMessage, message_list_adapter
from raf.run import OuterRun, RunContext
from raf.session import Session
from raf.updates import AgentPath, AgentResponse, RequestInfoUpdate, Usage

if TYPE_CHECKING:
    from raf.engine.workflow import Workflow
    from raf.tools.journal import ToolJournal

__all__ = [
    "RootRun",
    "TurnRecord",
    "Waiting",
    "answers_from",
    "root_turn",
    "run_as_agent",
]

_ENGINE_KEYS = (WAITING, RUNNING, FOREIGN, CLIENT_WAIT)


# --- waiting -------------------------------------------------------------------------------


@dataclass(slots=True)
class Waiting:
    """What a workflow agent that ended its turn waiting keeps in the session."""

    state: RunState
    """The engine state to resume (its requests, answers so far and outputs)."""
    order: list[str] = field(default_factory=new_list)
    """Request ids in the order they were streamed (plain-text answers go oldest first)."""
    recorded: list[ChatMessage] = field(default_factory=new_list)
    """This turn's messages the root has already written into the history."""

    def open_ids(self) -> list[str]:
        """Ids of the requests without an answer, oldest first in stream order."""
        state = self.state
        pending = [r.request_id for r in state.requests if r.request_id not in state.answers]
        known = set(pending)
        ordered = [rid for rid in dict.fromkeys(self.order) if rid in known]
        streamed = set(ordered)
        return ordered + [rid for rid in pending if rid not in streamed]

    def pending(self) -> list[RequestInfoUpdate]:
        """The open requests as stream items, in the order of `open_ids`."""
        by_id = {r.request_id: r for r in self.state.requests}
        return [
            RequestInfoUpdate(request_id=rid, payload=by_id[rid].payload, path=by_id[rid].path)
            for rid in self.open_ids()
        ]

    def to_json(self) -> dict[str, Any]:
        """The JSON kept in the session (so a waiting session survives `Session.to_json`)."""
        return {
            "state": encode_state(self.state),
            "order": self.order,
            "recorded": encode(self.recorded, "the messages of a waiting turn"),
        }

    @classmethod
    def from_json(cls, data: Any) -> Waiting:
        """The `Waiting` that `to_json` wrote."""
        kept = cast(dict[str, Any], data)
        recorded: list[ChatMessage] = decode(kept["recorded"]) if "recorded" in kept else []
        return cls(
            decode_state(cast(dict[str, Any], kept["state"])),
            [str(rid) for rid in cast(list[Any], kept.get("order", []))],
            recorded,
        )


def load_waiting(session: Session, place: AgentPath, workflow: Workflow) -> Waiting | None:
    """The waiting state the agent at `place` (running `workflow`) keeps, or None."""
    kept = session.get(key_of(place, WAITING))
    if kept is None:
        return None
    workflow.declare_models()
    return Waiting.from_json(kept)


def answers_from(messages: Sequence[ChatMessage], request_ids: Sequence[str]) -> dict[str, Any]:
    """The answers a turn's messages give to the open requests `request_ids` (oldest first).

    A tool message with `ToolResultContent(call_id=request_id, result=<JSON>)` answers that
    request with the parsed JSON (the text itself when it is not JSON); a user message's text
    answers the oldest request not answered yet.

    Example:
        >>> answers_from([ChatMessage.user("yes")], ["wf/review@1#0"])
        {'wf/review@1#0': 'yes'}
    """
    remaining = list(request_ids)
    answers: dict[str, Any] = {}
    for message in messages:
        results = [c for c in message.contents if c.type == "tool_result"]
        if results:
            for result in results:
                if result.call_id in remaining:
                    remaining.remove(result.call_id)
                    answers[result.call_id] = _parse(result.result)
        elif message.role == "user" and remaining:
            answers[remaining.pop(0)] = message.text
    return answers


def _as_history(messages: Sequence[ChatMessage], answers: dict[str, Any]) -> list[ChatMessage]:
    """The turn's messages as the history keeps them: a typed answer becomes a user message
    (a `tool` message without its call would be refused by a model's API)."""
    kept: list[ChatMessage] = []
    for message in messages:
        results = [c for c in message.contents if c.type == "tool_result" and c.call_id in answers]
        if results and message.role == "tool":
            kept.append(ChatMessage.user("\n".join(text_of(answers[r.call_id]) for r in results)))
        else:
            kept.append(message)
    return kept


def _parse(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _without(messages: Sequence[ChatMessage], written: Sequence[ChatMessage]) -> list[ChatMessage]:
    """`messages` minus one occurrence of each of `written` (already in the history)."""
    if not written:
        return list(messages)
    left = list(written)
    rest: list[ChatMessage] = []
    for message in messages:
        if message in left:
            left.remove(message)
        else:
            rest.append(message)
    return rest


# --- checkpoints and nested progress --------------------------------------------------------


@dataclass(slots=True)
class TurnRecord:
    """The root agent's turn a checkpoint belongs to, so `Workflow.resume` can finish it."""

    path: AgentPath
    """The root agent's path (its history key is `"{path}#history"`)."""
    base: int
    """How many messages the history held before the turn."""
    entered: list[ChatMessage]
    """The turn's new messages as the history keeps them."""
    recorded: list[ChatMessage] = field(default_factory=new_list)
    """Messages of this waiting chain already in the history."""

    def to_json(self, produced: list[ChatMessage]) -> dict[str, Any]:
        """The record as checkpoint data, with what the turn produced so far."""
        return {
            "path": list(self.path),
            "base": self.base,
            "entered": encode(self.entered, "the messages of the turn"),
            "recorded": encode(self.recorded, "the messages of the turn"),
            "produced": encode(produced, "the messages of the turn"),
        }

    @classmethod
    def from_json(cls, data: Any) -> tuple[TurnRecord, list[ChatMessage]]:
        """The record and the produced messages that `to_json` wrote."""
        kept = cast(dict[str, Any], data)
        path: Any = kept["path"]
        base: Any = kept["base"]
        if not isinstance(path, list) or not path or type(base) is not int or base < 0:
            raise ValueError("the turn record's path or base is not what raf writes")
        record = cls(
            tuple(str(p) for p in cast(list[Any], path)),
            base,
            _messages(kept["entered"]),
            _messages(kept["recorded"]),
        )
        return record, _messages(kept["produced"])


def _messages(data: Any) -> list[ChatMessage]:
    """Messages `encode` wrote (an empty list too).

    Raises:
        TypeError: when `data` holds anything else.
    """
    value: object = decode(cast(dict[str, Any], data))
    kind = type(value).__name__
    items: list[Any] = cast(list[Any], value) if isinstance(value, list) else []
    if items is not value or not all(isinstance(m, ChatMessage) for m in items):
        raise TypeError(f"expected a list of messages, found {kind}")
    return cast(list[ChatMessage], items)


class RootRun:
    """The outermost workflow run of a tree: it alone saves checkpoints, after each of its
    supersteps and, for nested workflows, after each of theirs."""

    __slots__ = ("checkpoints", "journal", "record", "runner")

    keeps_start = True

    def __init__(self, session: Session, record: TurnRecord | None) -> None:
        self.checkpoints = session.store is not None
        self.record = record
        self.runner: Runner | None = None
        self.journal: ToolJournal | None = None
        """Where the run's tool calls are recorded, when it checkpoints to an event log."""

    def bind(self, runner: Runner) -> None:
        """Run with `runner`; a run that checkpoints gets an id (kept in its state, so its
        resumes have it too) under which its tool calls are recorded."""
        self.runner = runner
        if not self.checkpoints:
            return
        # Imported here: the stores package is only needed once a run checkpoints.
        from raf.stores.base import EventLog
        from raf.stores.ids import new_id
        from raf.tools.journal import ToolJournal

        state = runner.state
        fresh = not state.run
        if fresh:
            state.run = new_id()
        store = runner.session.store
        if isinstance(store, EventLog):
            self.journal = ToolJournal(
                store, state.run, fresh=fresh, superstep=lambda: runner.state.superstep
            )

    async def saved(self, runner: Runner, index: int) -> RunStatus | None:
        """After superstep `index` of the root: save a checkpoint of its state."""
        if not self.checkpoints:
            return None
        # Between supersteps no nested workflow runs: drop states a restored session kept
        # for calls this run did not make again.
        session = runner.session
        for key in session.keys(runner.prefix):
            if key.endswith(RUNNING):
                session.pop(key)
        return await self._save(runner, runner.state, index)

    async def checkpoint_within(self) -> None:
        """Save a checkpoint inside the root's superstep in progress (a nested workflow
        finished one of its own): the root's state as of the superstep's start, the session
        now.

        Raises:
            CheckpointValueError: naming what is not serializable.
        """
        runner = self.runner
        assert runner is not None and runner.start is not None
        start = runner.start
        failed = await self._save(runner, start, start.superstep - 1, raising=True)
        assert failed is None

    async def _save(
        self, runner: Runner, state: RunState, index: int, *, raising: bool = False
    ) -> RunStatus | None:
        store = runner.session.store
        assert store is not None
        workflow = runner.workflow
        record = self.record
        try:
            checkpoint_id = await save_checkpoint(
                store,
                runner.session,
                workflow_id=workflow.id,
                fingerprint=workflow.fingerprint,
                scope=runner.scope,
                superstep=index,
                state=state,
                turn=None if record is None else record.to_json(runner.produced),
            )
        except CheckpointValueError as exc:
            if raising:
                raise
            await runner.sink(WorkflowFailed(exc, node_id=exc.node_id))
            return "failed"
        await runner.sink(CheckpointSaved(checkpoint_id, superstep=index))
        return None


@dataclass(slots=True)
class NestedRun:
    """A nested workflow's run while its root checkpoints: its state is kept in the session
    after each of its supersteps, for the parent's call that runs it, and the root saves."""

    key: str
    """The session key (`"{agent path}#running"`)."""
    call: str
    """The parent's call that runs it (`"{node}@{superstep}#{n}"`, after the parent's own)."""
    root: OuterRun
    """The outermost run, which saves the checkpoints."""
    keeps_start = False

    async def saved(self, runner: Runner, index: int) -> RunStatus | None:
        """After a superstep of the nested run: keep its state, have the root checkpoint."""
        if runner.state.requests:
            return None
        try:
            kept = {"graph": runner.workflow.fingerprint, "state": encode_state(runner.state)}
            calls = self._calls(runner.session)
            runner.session.set(self.key, {**calls, self.call: kept})
            await self.root.checkpoint_within()
        except CheckpointValueError as exc:
            await runner.sink(WorkflowFailed(exc, node_id=exc.node_id))
            return "failed"
        return None

    def continued(self, session: Session, workflow: Workflow) -> RunState | None:
        """The state kept for this call by a run a resume re-runs, or None.

        Raises:
            ValueError: when a different graph of the workflow kept it.
        """
        kept = self._calls(session).get(self.call)
        if kept is None:
            return None
        workflow.declare_models()
        if kept.get("graph") != workflow.fingerprint:
            path = self.key.removesuffix(RUNNING)
            raise ValueError(
                f"the checkpoint holds the state of nested workflow {path!r} from a different "
                "graph (nodes or edges changed); resume it with the graph that wrote it"
            )
        return decode_state(cast(dict[str, Any], kept["state"]))

    def finished(self, session: Session) -> None:
        """Forget the state kept for this call (the run ended: the root's checkpoints hold it)."""
        calls = self._calls(session)
        if self.call not in calls:
            return
        rest = {other: kept for other, kept in calls.items() if other != self.call}
        if rest:
            session.set(self.key, rest)
        else:
            session.pop(self.key)

    def _calls(self, session: Session) -> dict[str, dict[str, Any]]:
        found = session.get(self.key)
        return cast(dict[str, dict[str, Any]], found) if isinstance(found, dict) else {}


# --- a workflow as an agent -----------------------------------------------------------------


async def run_as_agent(
    workflow: Workflow,
    messages: list[ChatMessage],
    ctx: RunContext,
    sink: AgentSink,
    *,
    record: TurnRecord | None = None,
) -> AgentResponse:
    """One call of `workflow` as the agent at `ctx.path`: start it on `messages`, or resume
    the run it keeps waiting with this turn's answers, or continue the call a resumed
    superstep re-runs. `record` is the root agent's turn, for its checkpoints."""
    session = ctx.session
    path = ctx.path
    turn = ctx.turn
    engine = turn.engine
    waiting = load_waiting(session, ctx.place, workflow)
    nested: NestedRun | None = None
    state: RunState | None = None
    if engine is not None and engine.checkpoints and ctx.call is not None:
        nested = NestedRun(key_of(path, RUNNING), ctx.call, engine)
        state = nested.continued(session, workflow)
    if state is None:
        if waiting is None:
            state = RunState.start(workflow.start_id, messages)
        else:
            state = waiting.state
            state.answer(turn.answers)
            state.errors |= turn.errors & state.answers.keys()
            # Levels below that run again need every answer, earlier turns' too.
            for request_id, value in state.answers.items():
                turn.answers.setdefault(request_id, value)
            turn.errors |= state.errors
    root = RootRun(session, record) if engine is None else None
    runner = Runner(
        workflow,
        state,
        sink,
        session,
        scope=path,
        agent_context=ctx,
        progress=root if root is not None and root.checkpoints else nested,
        call=ctx.call,
        reports=sink,
    )
    if root is not None:
        root.bind(runner)
        turn.engine = root
    try:
        status = await runner.execute()
    finally:
        if root is not None:
            turn.engine = None
        if nested is not None:
            nested.finished(session)
    if status == "failed":
        raise sink.failure()
    usage = Usage(input_tokens=runner.input_tokens, output_tokens=runner.output_tokens)
    if status == "waiting":
        order = [*(waiting.order if waiting is not None else ()), *turn.asked]
        kept = Waiting(state, order, waiting.recorded if waiting is not None else [])
        session.set(key_of(ctx.place, WAITING), kept.to_json())
        return AgentResponse(
            messages=list(runner.produced), usage=usage, status="waiting", pending=kept.pending()
        )
    if waiting is not None:
        session.pop(key_of(ctx.place, WAITING))
    return turn_response(state, usage)


async def root_turn(
    workflow: Workflow, messages: list[ChatMessage], ctx: RunContext, sink: AgentSink
) -> AgentResponse:
    """One turn of a workflow agent that is the root of its run: answer what it waits on,
    run or resume, and write the turn into the session history exactly once, in order.

    The response of a waiting turn holds what its agents produced so far; the response of the
    turn that completes holds the whole answer (the messages an uninterrupted turn would
    give), though the history holds each message once.
    """
    session = ctx.session
    history_key = ctx.key("history")
    history = session.get_as(history_key, message_list_adapter) or []
    waiting = load_waiting(session, ctx.path, workflow)
    pending = waiting.open_ids() if waiting is not None else []
    refuse_stray_results(messages, [*history, *messages], pending, ctx.path)
    entered = messages
    recorded: list[ChatMessage] = []
    if waiting is not None:
        answers = answers_from(messages, pending)
        ctx.turn.answers.update(answers)
        ctx.turn.errors.update(
            c.call_id
            for m in messages
            for c in m.contents
            if c.type == "tool_result" and c.is_error and c.call_id in answers
        )
        entered = _as_history(messages, answers)
        recorded = waiting.recorded
    conversation = [*history, *entered]
    record = TurnRecord(ctx.path, len(history), entered, recorded)
    kept = _engine_states(session, ctx.path)
    try:
        response = await run_as_agent(workflow, conversation, ctx, sink, record=record)
    except BaseException:
        # A failed or cancelled turn never happened: every level that waited waits again,
        # on the same requests, so the next turn can answer them.
        _restore_engine_states(session, ctx.path, kept)
        raise
    _write_turn(
        session, ctx.path, workflow, conversation, recorded, response.messages, response.status
    )
    # A waiting turn answers with what its agents produced so far; the turn that completes
    # the chain with the whole answer, as an uninterrupted turn would.
    return response


def _engine_states(session: Session, path: AgentPath) -> dict[str, Any]:
    """What the engine keeps in `session` for the agent at `path` and every agent in it."""
    base = "/".join(path)
    keys = [base + suffix for suffix in _ENGINE_KEYS]
    keys += [key for key in session.keys(base + "/") if key.endswith(_ENGINE_KEYS)]
    return {key: session.get(key) for key in keys if session.get(key) is not None}


def _restore_engine_states(session: Session, path: AgentPath, kept: dict[str, Any]) -> None:
    """Put back what `_engine_states` found (values are replaced, never changed in place)."""
    for key in _engine_states(session, path):
        if key not in kept:
            session.pop(key)
    for key, value in kept.items():
        session.set(key, value)


def _write_turn(
    session: Session,
    path: AgentPath,
    workflow: Workflow,
    history: list[ChatMessage],
    recorded: list[ChatMessage],
    messages: list[ChatMessage],
    status: RunStatus,
) -> list[ChatMessage]:
    """Write a root agent's turn into its history; return the messages it added.

    A waiting turn adds what its agents produced so far (the answers then follow it); the
    turn that completes the chain adds the rest of its response, and takes back what an
    earlier waiting turn added that the response does not hold, so the history ends as an
    uninterrupted turn's would, with the answers in it.
    """
    new = _without(messages, recorded)
    if status == "waiting":
        kept = load_waiting(session, path, workflow)
        assert kept is not None
        kept.recorded = [*recorded, *new]
        session.set(key_of(path, WAITING), kept.to_json())
    else:
        history = _drop_last(history, _without(recorded, messages))
    session.set(key_of(path, "#history"), [*history, *new])
    return new


def _drop_last(history: list[ChatMessage], stale: list[ChatMessage]) -> list[ChatMessage]:
    """`history` without the last occurrence of each message of `stale`."""
    if not stale:
        return history
    kept = list(history)
    for message in stale:
        for index in range(len(kept) - 1, -1, -1):
            if kept[index] == message:
                del kept[index]
                break
    return kept


def answer_messages(state: RunState, responses: Mapping[str, Any]) -> list[ChatMessage]:
    """The answers a resume gives (`responses`), as the history keeps them: user messages, in
    the order of the requests."""
    ids = [r.request_id for r in state.requests if r.request_id in responses]
    return [ChatMessage.user(text_of(responses[rid])) for rid in ids]


def finish_resumed_turn(
    workflow: Workflow,
    session: Session,
    turn: tuple[TurnRecord, list[ChatMessage]],
    state: RunState,
    status: RunStatus,
    answers: list[ChatMessage],
    produced: list[ChatMessage],
) -> None:
    """Write into the history the root agent's turn that `Workflow.resume` finished (or that
    waits again, answered by `answers`), as the agent's own turn would have; `produced` is
    what the resumed run's agents produced (a turn that waits again keeps it, like a live one)."""
    record, kept = turn
    order = [r.request_id for r in state.requests]
    if status == "failed":
        return
    history = session.get_as(key_of(record.path, "#history"), message_list_adapter) or []
    # The history as the turn found it: a live session may hold what the turn wrote since.
    written = [*history[: record.base], *record.entered]
    recorded = list(record.recorded)
    if answers:
        # The waiting turn's own messages come first, then the answers.
        before = _without(kept, recorded)
        written += [*before, *answers]
        recorded += before
    if status == "waiting":
        session.set(key_of(record.path, WAITING), Waiting(state, order, recorded).to_json())
        messages = produced
    else:
        session.pop(key_of(record.path, WAITING))
        messages = turn_response(state, Usage()).messages
    _write_turn(session, record.path, workflow, written, recorded, messages, status)


def check_kept_states(snapshot: dict[str, Any]) -> None:
    """Decode every state the engine kept in a checkpoint's session values (waiting levels,
    nested runs, agents that are not raf's), so a damaged one is refused before the run.

    Raises:
        KeyError, TypeError, ValueError: naming what is wrong.
    """
    for key, value in snapshot.items():
        if key.endswith(WAITING):
            Waiting.from_json(value)
        elif key.endswith(RUNNING):
            for kept in cast(dict[str, Any], value).values():
                decode_state(cast(dict[str, Any], kept)["state"])
        elif key.endswith(FOREIGN):
            kept = cast(dict[str, Any], value)
            Session.from_json(str(kept["session"]))
            if not isinstance(kept["requests"], list):
                raise TypeError(f"the requests kept under {key!r} are not a list")


def restore_session(session: Session, snapshot: dict[str, Any], scope: AgentPath) -> None:
    """Give `session` a checkpoint's state: its keys, and none of the engine's kept states
    under `scope` that the checkpoint does not hold; other keys stay."""
    prefix = "/".join(scope)
    for key in session.keys(prefix):
        if key.endswith(_ENGINE_KEYS) and key not in snapshot:
            session.pop(key)
    session.merge(snapshot)


# --- the response and the stream ------------------------------------------------------------


def turn_response(state: RunState, usage: Usage) -> AgentResponse:
    """The turn's response: outputs that are messages become messages, the last other one the
    value (an empty list adds no messages and leaves the value as it was)."""
    messages: list[ChatMessage] = []
    value: Any = None
    for _, output in state.outputs:
        if isinstance(output, ChatMessage):
            messages.append(output)
        elif isinstance(output, AgentResponse):
            response = cast("AgentResponse[Any]", output)  # isinstance cannot tell the value type
            messages.extend(response.messages)
            if response.value is not None:
                value = response.value
        elif is_messages(output):
            messages.extend(output)
        else:
            value = output
    return AgentResponse(messages=messages, usage=usage, value=value)
