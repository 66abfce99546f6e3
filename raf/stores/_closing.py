"""`ClosingStore`: `async with store` closes it on exit, the same for every backend."""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType


class ClosingStore(ABC):
    """A store whose `async with` block ends in `aclose()`."""

    __slots__ = ()

    @abstractmethod
    async def aclose(self) -> None:
        """Release what the store holds; idempotent."""

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
