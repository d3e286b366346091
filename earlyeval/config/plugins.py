"""Open registries: feature families and run formats by name, entry point or dotted path.

An unknown name is an error listing the known ones, never dropped; ``get`` never imports a dotted path, so a model
directory can only name classes this process knows. How names resolve: docs/architecture.md, "Open registries".
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, Callable

from earlyeval.core.errors import UnknownPluginError


def load_object(path: str) -> Any:
    """``package.module:attr`` (an attribute, dots allowed) or ``package.module`` (the module itself)."""
    mod_name, _, attr = path.partition(":")
    try:
        obj: Any = importlib.import_module(mod_name)
    except ImportError as e:
        raise ImportError(f"cannot import '{mod_name}' (from '{path}'): {e}") from e
    for part in filter(None, attr.split(".")):
        try:
            obj = getattr(obj, part)
        except AttributeError as e:
            raise ImportError(f"'{mod_name}' has no attribute '{attr}' (from '{path}')") from e
    return obj


def is_dotted_path(name: str) -> bool:
    return ":" in name


class Registry:
    """name -> object, filled from a built-in table of dotted paths, entry points and ``register``."""

    def __init__(
        self,
        kind: str,
        group: str,
        builtins: dict[str, str],
        check: Callable[[str, Any], Any] | None = None,
        key: Callable[[str, Any], str] | None = None,
        import_dotted: bool = True,
    ):
        self.kind = kind
        self.import_dotted = import_dotted
        self._origin: dict[
            str, str
        ] = {}  # name -> "module:qualname" of what ``register`` was given
        self._key = key or _name_attr
        self.group = group
        self.builtins = dict(builtins)
        self._check = check or (lambda name, obj: obj)
        self._paths: dict[str, str] = dict(builtins)  # name -> dotted path, not imported yet
        self._objects: dict[str, Any] = {}
        self._entry_points_read = False

    def _read_entry_points(self) -> None:
        if self._entry_points_read:
            return
        self._entry_points_read = True
        from importlib.metadata import entry_points

        for ep in entry_points(group=self.group):
            if ep.name in self.builtins:
                if ep.value.replace(" ", "") != self.builtins[ep.name]:
                    raise UnknownPluginError(
                        self.kind,
                        ep.name,
                        self.known(),
                        f"entry point {ep.value!r} would shadow the built-in {self.builtins[ep.name]!r}",
                    )
                continue
            self._paths.setdefault(ep.name, ep.value.replace(" ", ""))

    def known(self) -> list[str]:
        """Every name this registry can resolve (built-in first, then the rest sorted)."""
        self._read_entry_points()
        rest = sorted(n for n in {*self._paths, *self._objects} if n not in self.builtins)
        return list(self.builtins) + rest

    def register(self, name: str, obj: Any) -> Any:
        """Register ``obj`` under ``name``; re-registering the same object is a no-op, another one an error."""
        origin = dotted_path_of(obj)
        obj = self._check(name, obj)
        have = self._objects.get(name)
        if have is None and name in self._paths:
            have = self.get(name)
        if have is not None and have is not obj:
            raise UnknownPluginError(
                self.kind,
                name,
                self.known(),
                f"the name is taken by {have!r}; {obj!r} cannot have it too",
                group=self.group,
            )
        self._objects[name] = obj
        self._origin.setdefault(name, origin)
        return obj

    def unregister(self, name: str) -> None:
        """Forget a name registered in this process (built-ins and entry points stay)."""
        if name in self._paths:
            raise ValueError(
                f"{self.kind} '{name}' is built in or an entry point: it cannot be unregistered"
            )
        self._objects.pop(name, None)

    def get(self, name: str) -> Any:
        """The object registered under ``name`` (imported on first use); never imports a dotted path."""
        if name in self._objects:
            return self._objects[name]
        if name not in self._paths:
            self._read_entry_points()
        if name not in self._paths:
            raise UnknownPluginError(self.kind, name, self.known(), group=self.group)
        try:
            obj = load_object(self._paths[name])
        except ImportError as e:
            raise UnknownPluginError(
                self.kind,
                name,
                self.known(),
                f"its class could not be imported ({e})",
                group=self.group,
            ) from e
        self._objects[name] = obj = self._check(name, obj)
        return obj

    def resolve(self, name: str) -> Any:
        """``get`` for a name; for a dotted path, import it and register the object under ``key(obj)``."""
        if not is_dotted_path(name):
            return self.get(name)
        if not self.import_dotted:
            return self._registered_path(name)
        try:
            obj = load_object(name)
        except ImportError as e:
            raise UnknownPluginError(self.kind, name, self.known(), str(e), group=self.group) from e
        return self.register(self.key(name, obj), obj)

    def _registered_path(self, path: str) -> Any:
        """The registered object a dotted path names (declared path, or the origin of a ``register`` call);
        nothing is imported for a path no registration names."""
        self._read_entry_points()
        for n, declared in {**self._paths, **self._origin}.items():
            if declared == path or n == path:
                return self.get(n)
        raise UnknownPluginError(
            self.kind,
            path,
            self.known(),
            f"a dotted path must name a registered {self.kind} (an entry point, or registered in this "
            f"process); '{path}' is not one, and nothing was imported",
            group=self.group,
        )

    def key(self, name: str, obj: Any) -> str:
        """The name a dotted-path object is registered under (families: their ``name``)."""
        return self._key(name, obj)


def dotted_path_of(obj: Any) -> str:
    """``module:qualname`` of a class or function, the module's name for a module ("" when it has neither)."""
    if isinstance(obj, ModuleType):
        return obj.__name__
    mod, qual = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    return f"{mod}:{qual}" if isinstance(mod, str) and isinstance(qual, str) else ""


def _name_attr(path: str, obj: Any) -> str:
    n = getattr(obj, "name", None)
    return n if isinstance(n, str) and n else path
