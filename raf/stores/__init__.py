"""Where workflow runs keep their checkpoints, event log and content.

`MemoryCheckpointStore` for tests, `SqliteCheckpointStore` (one file, the embedded default) and
`PostgresCheckpointStore` (several workers sharing runs) all implement `CheckpointStore` and
`EventLog`, and keep sessions single-writer among everything sharing them (`SessionLocking`);
`new_id()` makes the sortable ids they order by, `content_digest()` the sha256 an
event's content is filed under.

Example:
    >>> from raf.session import Session
    >>> from raf.stores import SqliteCheckpointStore
    >>> session = Session(id="chat-1", store=SqliteCheckpointStore("runs.db"))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from raf._lazy import lazy_exports
from raf.errors import CheckpointVersionError as CheckpointVersionError
from raf.stores._records import content_digest as content_digest
from raf.stores.base import CHECKPOINT_FORMAT_VERSION as CHECKPOINT_FORMAT_VERSION
from raf.stores.base import SUPPORTED_CHECKPOINT_VERSIONS as SUPPORTED_CHECKPOINT_VERSIONS
from raf.stores.base import UNCHECKED as UNCHECKED
from raf.stores.base import Checkpoint as Checkpoint
from raf.stores.base import CheckpointStore as CheckpointStore
from raf.stores.base import EventChange as EventChange
from raf.stores.base import EventLog as EventLog
from raf.stores.base import FencedSaves as FencedSaves
from raf.stores.base import SessionLock as SessionLock
from raf.stores.base import SessionLocking as SessionLocking
from raf.stores.base import StoredEvent as StoredEvent
from raf.stores.ids import new_id as new_id

if TYPE_CHECKING:
    from raf.stores.memory import MemoryCheckpointStore as MemoryCheckpointStore
    from raf.stores.postgres import PostgresCheckpointStore as PostgresCheckpointStore
    from raf.stores.sqlite import SqliteCheckpointStore as SqliteCheckpointStore

# The stores load on first use: the engine's checkpoint types do not bring SQLite or the
# PostgreSQL store with them.
_LAZY: dict[str, str] = {
    "MemoryCheckpointStore": "raf.stores.memory",
    "PostgresCheckpointStore": "raf.stores.postgres",
    "SqliteCheckpointStore": "raf.stores.sqlite",
}

__getattr__, __dir__ = lazy_exports(globals(), _LAZY)

__all__ = [
    "CHECKPOINT_FORMAT_VERSION",
    "SUPPORTED_CHECKPOINT_VERSIONS",
    "UNCHECKED",
    "Checkpoint",
    "CheckpointStore",
    "CheckpointVersionError",
    "EventChange",
    "EventLog",
    "FencedSaves",
    "MemoryCheckpointStore",
    "PostgresCheckpointStore",
    "SessionLock",
    "SessionLocking",
    "SqliteCheckpointStore",
    "StoredEvent",
    "content_digest",
    "new_id",
]
