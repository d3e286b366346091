"""Feature names in settings are names of features: a name no family makes is an error, never dropped.

``monotone`` (feature -> direction), ``drop_features`` and ``only_features`` (fnmatch patterns) name features; a
misspelt one used to constrain, drop or keep nothing without a word.  A name is known when a registered family
makes it (each built unfitted with the settings' own parameters); a name of a family the model does not use is
known, and applies to nothing in that model (``OutcomeModel`` constrains what it has), so a catalog's settings
serve the ablations that add a family.  Checked before any fit (``evaluate.FoldRunner``)."""

from __future__ import annotations

import difflib
import fnmatch
import json
from functools import lru_cache
from typing import Any, Iterable

from earlyeval.core.errors import SettingError
from earlyeval.features import FAMILIES, build_family

_GLOB = set("*?[")


@lru_cache(maxsize=32)
def _known(params: str, extra: tuple[str, ...]) -> tuple[frozenset[str], tuple[str, ...]]:
    text, peer = json.loads(params)
    names: set[str] = set()
    unbuilt = []
    for fam in [*FAMILIES.known(), *extra]:
        try:
            names.update(build_family(fam, text_params=text, peer_params=peer).names)
        except Exception:  # noqa: BLE001 - a family that cannot be built unfitted: its names are unknowable
            unbuilt.append(fam)
    return frozenset(names), tuple(unbuilt)


def known_feature_names(
    families: Iterable[str] = (), text_params: Any = None, peer_params: Any = None
) -> tuple[frozenset[str], tuple[str, ...]]:
    """(every feature name the registered families and ``families`` make, the families that could not be built
    unfitted to say theirs)."""
    key = json.dumps([text_params or {}, peer_params or {}], sort_keys=True, default=str)
    return _known(key, tuple(families))


def check_feature_settings(cfg: Any, where: str = "settings") -> None:
    """Refuse (``SettingError`` naming ``<where>.<key>``) a ``monotone`` key, or a ``drop_features`` /
    ``only_features`` entry, that names no feature: a literal name no family makes, a pattern matching none."""
    known, unbuilt = known_feature_names(cfg.families, cfg.text_params, cfg.peer_params)
    if set(unbuilt) & set(cfg.families):
        return  # a family of this model names its features only once fitted: nothing can be judged unknown
    named = [(f"monotone.{k}", k) for k in (cfg.monotone or {})]
    for key in ("drop_features", "only_features"):
        named += [(f"{key}[{i}]", p) for i, p in enumerate(getattr(cfg, key) or ())]
    for key, name in named:
        if _GLOB & set(name) and not key.startswith("monotone"):
            if not any(fnmatch.fnmatch(n, name) for n in known):
                raise SettingError(where, key, f"{name!r} matches no feature of any family")
        elif name not in known:
            close = difflib.get_close_matches(name, sorted(known), n=3)
            hint = f" (similar: {', '.join(close)})" if close else ""
            raise SettingError(where, key, f"{name!r} is no feature's name{hint}")


__all__ = ["check_feature_settings", "known_feature_names"]
