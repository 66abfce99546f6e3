"""Module attributes that load their module on first use, so importing a package stays cheap."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    namespace: dict[str, Any], sources: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module's `__getattr__` and `__dir__` serving `sources` (public name -> module).

    A name is imported from its module when first read and then kept in `namespace` (the
    module's `globals()`), so later reads cost nothing. `dir()` of a module with `__all__`
    lists just those names (not `annotations`, `TYPE_CHECKING` or the submodules loaded).

    Example:
        >>> namespace = {"__name__": "pkg"}
        >>> getattr_, dir_ = lazy_exports(namespace, {"dedent": "textwrap"})
        >>> getattr_("dedent")("  x")
        'x'
        >>> "dedent" in namespace
        True
    """
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = sources.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        public: list[str] | None = namespace.get("__all__")
        return sorted(set(namespace) | set(sources) if public is None else set(public))

    return __getattr__, __dir__
