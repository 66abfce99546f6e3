"""A voter that fails with DBOS's own error fails a durable vote rather than abstain."""

from __future__ import annotations

import anyio
import pytest
from dbos import DBOS
from dbos._error import DBOSUnexpectedStepError

from raf import FunctionAgent, Session, VoteBuilder
from raf.durable import DurableAgent
from raf.errors import DurableRunError
from raf.messages import ChatMessage

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # DBOS is asyncio-only


async def test_a_voter_failing_with_a_dbos_error_fails_the_vote(dbos_sqlite: str) -> None:
    def replayed_otherwise(messages: list[ChatMessage]) -> str:
        raise DBOSUnexpectedStepError("w", 2, "raf.model:vote/b#0", "raf.tool:x#0")

    vote = (
        VoteBuilder(id="vote")
        .add_agent(FunctionAgent("a", lambda m: "tea"))
        .add_agent(FunctionAgent("b", replayed_otherwise))
        .add_agent(FunctionAgent("c", lambda m: "tea"))
        .build()
        .as_agent()
    )
    durable = DurableAgent(vote)
    DBOS.launch()
    with anyio.fail_after(30), pytest.raises(DurableRunError, match="DBOSUnexpectedStepError"):
        await durable.run("tea or coffee?", Session(id="v"))
