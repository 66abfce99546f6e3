"""Vote: the same question to every voter at once; their ballots decide.

`builder` compiles it (`VoteBuilder`), `ballot` holds its data (`Ballot`, `VoteResult`),
`policy` decides (`plurality`, `majority`, `unanimous`, `weighted`, `judge`), and `judging`
asks the judge when the policy cannot.
"""

from raf.builders.vote.ballot import Ballot as Ballot
from raf.builders.vote.ballot import VoteResult as VoteResult
from raf.builders.vote.builder import VoteBuilder as VoteBuilder
from raf.builders.vote.policy import VotePolicy as VotePolicy
from raf.builders.vote.policy import judge as judge
from raf.builders.vote.policy import majority as majority
from raf.builders.vote.policy import plurality as plurality
from raf.builders.vote.policy import unanimous as unanimous
from raf.builders.vote.policy import weighted as weighted

__all__ = [
    "Ballot",
    "VoteBuilder",
    "VotePolicy",
    "VoteResult",
    "judge",
    "majority",
    "plurality",
    "unanimous",
    "weighted",
]
