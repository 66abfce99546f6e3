"""Magentic: a manager plans the task in a ledger and delegates each step to a participant.

`builder` compiles it (`MagenticBuilder`, its orchestrator and members), `ledger` holds the
manager's data (`TaskLedger`, `ProgressLedger`, `LedgerAnswer`, `LedgerChoice`), `manager`
its prompts and calls, and `review` the human review of the plan.
"""

from raf.builders.magentic.builder import MagenticBuilder as MagenticBuilder
from raf.builders.magentic.ledger import LedgerAnswer as LedgerAnswer
from raf.builders.magentic.ledger import LedgerChoice as LedgerChoice
from raf.builders.magentic.ledger import ProgressLedger as ProgressLedger
from raf.builders.magentic.ledger import TaskLedger as TaskLedger

__all__ = ["LedgerAnswer", "LedgerChoice", "MagenticBuilder", "ProgressLedger", "TaskLedger"]
