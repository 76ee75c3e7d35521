"""Connector kinds, registered with a decorator (the NetBox way to plug in backends).

@register
class SlurmConnector(BaseConnector):
    kind = "slurm"
"""

from __future__ import annotations

from importlib import import_module

from fleet.connectors.base import BaseConnector, ConfigError

_REGISTRY: dict[str, type[BaseConnector]] = {}
# The modules that define the built-in kinds; imported on first use so that registering stays lazy.
BUILTIN_MODULES = (
    "fleet.connectors.prometheus",
    "fleet.connectors.slurm",
    "fleet.connectors.kubernetes",
    "fleet.connectors.generic",
    "fleet.connectors.mlflow",
    "fleet.connectors.wandb",
)


def register(cls: type[BaseConnector]) -> type[BaseConnector]:
    if not cls.kind:
        raise TypeError(f"{cls.__name__} needs a `kind`")
    existing = _REGISTRY.get(cls.kind)
    if existing is not None and existing is not cls:
        raise TypeError(f"connector kind {cls.kind!r} is already registered by {existing.__name__}")
    _REGISTRY[cls.kind] = cls
    return cls


def _load_builtins() -> None:
    for module in BUILTIN_MODULES:
        import_module(module)


def connector_class(kind: str) -> type[BaseConnector]:
    _load_builtins()
    try:
        return _REGISTRY[kind]
    except KeyError:
        raise ConfigError(f"unknown connector kind {kind!r} (known: {', '.join(sorted(_REGISTRY))})") from None


def kinds() -> dict[str, type[BaseConnector]]:
    _load_builtins()
    return dict(sorted(_REGISTRY.items()))
