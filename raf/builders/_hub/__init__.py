"""One hub under handoff, group chat and Magentic: a coordinator, member steps, one message.

The three patterns are the same shape: a coordinator node that takes the run's input and
each member's report and gives the floor to the next member or ends the run, and one step
per participant that speaks and sends the conversation on. They differ only in how the next
speaker is chosen (a handoff tool call, a selector, a manager's ledger), so each configures
this hub: `floor` is the message (`Floor`), `steps` the nodes and their wiring.
"""

from raf.builders._hub.floor import Floor as Floor
from raf.builders._hub.floor import floor as floor
from raf.builders._hub.steps import Coordinator as Coordinator
from raf.builders._hub.steps import MemberStep as MemberStep
from raf.builders._hub.steps import compile_hub as compile_hub

__all__ = ["Coordinator", "Floor", "MemberStep", "compile_hub", "floor"]
