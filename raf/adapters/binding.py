"""`AdapterBinding`: which adapter plays each role of a role workflow.

Example:
    >>> from raf.adapters import create_llm_adapter
    >>> from raf.testing.scripted_provider import ScriptedProvider
    >>> cheap = create_llm_adapter(ScriptedProvider([]))
    >>> strong = create_llm_adapter(ScriptedProvider([]))
    >>> binding = AdapterBinding(cheap, overrides={"reviewer": strong})
    >>> binding.adapter_for("reviewer") is strong, binding.adapter_for("writer") is cheap
    (True, True)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TypeVar

from pydantic import BaseModel

from raf._defaults import new_dict
from raf.adapters.thread import ResultAdapterFn, RoleFn, RoleResult

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class AdapterBinding:
    """A default adapter, and per-role overrides by role name."""

    adapter: ResultAdapterFn
    """Makes every role without an override (any `AdapterFn`, or a role factory's)."""
    overrides: Mapping[str, ResultAdapterFn] = field(default_factory=new_dict)
    """Adapters for particular roles."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "overrides", MappingProxyType(dict(self.overrides)))

    def adapter_for(self, role: str) -> ResultAdapterFn:
        """The adapter of `role`: its override, else the default."""
        return self.overrides.get(role, self.adapter)

    def bind(self, role: str, prompt: str, schema: type[M]) -> RoleFn[M | RoleResult]:
        """The role function of `role` with `prompt` and output `schema`."""
        return self.adapter_for(role)(prompt, schema)
