"""Role workflows: roles append events to a thread's log, and a moderator picks who acts next.

`builder` compiles it (`RoleWorkflowBuilder`), `events` holds its data (`RoleEvent`, `END`,
`Moderator`), `program` the roles and the moderator's decisions, `nodes` the graph's nodes,
and `ticks` runs threads from outside a run (`TickRunner`).
"""

from raf.builders.roles.builder import RoleWorkflowBuilder as RoleWorkflowBuilder
from raf.builders.roles.events import END as END
from raf.builders.roles.events import End as End
from raf.builders.roles.events import Moderator as Moderator
from raf.builders.roles.events import RoleEvent as RoleEvent
from raf.builders.roles.ticks import TickRunner as TickRunner

__all__ = ["END", "End", "Moderator", "RoleEvent", "RoleWorkflowBuilder", "TickRunner"]
