"""Plugin registry: name -> factory (kube-scheduler ``framework/runtime/registry.go``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

PluginFactory = Callable[..., Any]

__all__ = ["Registry", "PluginFactory"]


class Registry:
    """Maps plugin names to factories. Duplicate names are rejected.

    A factory is called as ``factory(**args)`` and returns an object with a ``name``
    attribute equal to the registered name.
    """

    __slots__ = ("_factories",)

    def __init__(self, factories: dict[str, PluginFactory] | None = None) -> None:
        self._factories: dict[str, PluginFactory] = {}
        for name, factory in (factories or {}).items():
            self.register(name, factory)

    def register(self, name: str, factory: PluginFactory) -> None:
        """Add a factory. Raises ValueError if ``name`` is empty or already registered."""
        if not name:
            raise ValueError("plugin name must not be empty")
        if name in self._factories:
            raise ValueError(f"plugin {name!r} is already registered")
        self._factories[name] = factory

    def unregister(self, name: str) -> None:
        """Remove a factory. Raises KeyError naming the plugin when absent."""
        if name not in self._factories:
            raise KeyError(f"plugin {name!r} is not registered")
        del self._factories[name]

    def merge(self, other: Registry) -> Registry:
        """New registry with both sets of factories; duplicate names raise ValueError."""
        out = Registry(dict(self._factories))
        for name, factory in other._factories.items():
            out.register(name, factory)
        return out

    def create(self, name: str, **args: Any) -> Any:
        """Instantiate plugin ``name``. Raises KeyError naming unknown plugins."""
        try:
            factory = self._factories[name]
        except KeyError:
            known = ", ".join(sorted(self._factories))
            raise KeyError(f"unknown plugin {name!r} (known: {known})") from None
        plugin = factory(**args)
        if getattr(plugin, "name", None) != name:
            raise ValueError(
                f"factory for {name!r} built a plugin named {getattr(plugin, 'name', None)!r}"
            )
        return plugin

    def __contains__(self, name: object) -> bool:
        return name in self._factories

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._factories)
