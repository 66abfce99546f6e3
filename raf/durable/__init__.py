"""Durable runs: raf agents as DBOS workflows, recovered by any worker (`raf[dbos]`).

`DurableAgent(agent)` runs `agent` durably behind the same `IAgent`; `answer()` answers a
waiting run from any process. The seam (`raf.durable.seam.Durability`) is what another
engine would implement. Importing this package needs `dbos` (`pip install 'raf[dbos]'`).
"""

from raf.durable.agent import DurableAgent as DurableAgent
from raf.durable.agent import answer as answer
from raf.durable.agent import resume as resume
from raf.durable.seam import Durability as Durability
from raf.tools.in_doubt import Decision as Decision

__all__ = ["Decision", "Durability", "DurableAgent", "answer", "resume"]
