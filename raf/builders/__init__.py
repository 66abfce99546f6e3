"""Builders of orchestration patterns, each compiled onto the graph engine.

Example:
    >>> from raf import FunctionAgent
    >>> a = FunctionAgent("a", lambda messages: "A")
    >>> SequentialBuilder(id="s").add_agent(a).build().as_agent().metadata.kind
    'sequential'
"""

from raf.builders.concurrent import ConcurrentBuilder as ConcurrentBuilder
from raf.builders.magentic import MagenticBuilder as MagenticBuilder
from raf.builders.magentic_ledger import LedgerAnswer as LedgerAnswer
from raf.builders.magentic_ledger import LedgerChoice as LedgerChoice
from raf.builders.magentic_ledger import ProgressLedger as ProgressLedger
from raf.builders.magentic_ledger import TaskLedger as TaskLedger
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
    "Ballot",
    "ConcurrentBuilder",
    "LedgerAnswer",
    "LedgerChoice",
    "MagenticBuilder",
    "ProgressLedger",
    "SequentialBuilder",
    "TaskLedger",
    "VoteBuilder",
    "VotePolicy",
    "VoteResult",
    "judge",
    "majority",
    "plurality",
    "unanimous",
    "weighted",
]
