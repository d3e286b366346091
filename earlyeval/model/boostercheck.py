"""LightGBM model text checked before LightGBM parses it, and parsed where a crash cannot reach us.

A malformed booster can abort LightGBM's whole process, so ``check_model_text`` validates its structure and
``probe`` parses it first in a child process. Both gates: docs/monitor.md, "The model directory".
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import subprocess
import sys
from typing import Any, Iterable

from earlyeval.core.env import env_flag
from earlyeval.core.errors import EarlyEvalError
from earlyeval.model import lgbm_capi

PROBE_TIMEOUT_S = 120.0

_HEADER_INT = ("num_class", "num_tree_per_iteration", "label_index", "max_feature_idx")
_INT_RE = re.compile(r"-?\d+\Z")
_TREE_LINE = re.compile(r"Tree=(\d+)\Z")
_probed: set[str] = set()


class BoosterTextError(EarlyEvalError, ValueError):
    """A LightGBM model text that is not what LightGBM's parser can safely read; says where."""


def _ints(v: str, where: str) -> list[int]:
    toks = v.split()
    out = []
    for t in toks:
        if not _INT_RE.match(t):
            raise BoosterTextError(f"{where}: {t[:20]!r} is not an integer")
        out.append(int(t))
    return out


def _one_int(v: str, where: str) -> int:
    xs = _ints(v, where)
    if len(xs) != 1:
        raise BoosterTextError(f"{where}: expected one integer")
    return xs[0]


def _floats(v: str, where: str) -> list[float]:
    out = []
    for t in v.split():
        try:
            x = float(t)
        except ValueError:
            raise BoosterTextError(f"{where}: {t[:20]!r} is not a number") from None
        if math.isnan(x):
            raise BoosterTextError(f"{where}: NaN")
        out.append(x)
    return out


def _kv(lines: list[str], where: str) -> dict[str, str]:
    d: dict[str, str] = {}
    for ln in lines:
        if not ln:
            continue
        k, sep, v = ln.partition("=")
        if not sep or not k:
            raise BoosterTextError(f"{where}: line {ln[:40]!r} is not key=value")
        if k in d:
            raise BoosterTextError(f"{where}: key {k!r} twice")
        d[k] = v
    return d


def _check_tree(d: dict[str, str], where: str, n_features: int) -> None:
    for k in (
        "num_leaves",
        "num_cat",
        "split_feature",
        "threshold",
        "decision_type",
        "left_child",
        "right_child",
        "leaf_value",
        "shrinkage",
    ):
        if k not in d:
            raise BoosterTextError(f"{where}: {k} missing")
    nl = _one_int(d["num_leaves"], f"{where}.num_leaves")
    nc = _one_int(d["num_cat"], f"{where}.num_cat")
    if nl is None or nl < 1 or nl > 1 << 20:
        raise BoosterTextError(f"{where}.num_leaves: {d['num_leaves']!r}")
    if nc is None or nc < 0 or nc > nl:
        raise BoosterTextError(f"{where}.num_cat: {d['num_cat']!r}")
    if d.get("is_linear", "0").strip() not in ("0", ""):
        raise BoosterTextError(f"{where}.is_linear: linear trees are not read")
    ni = nl - 1
    lens = {
        "split_feature": ni,
        "threshold": ni,
        "decision_type": ni,
        "left_child": ni,
        "right_child": ni,
        "split_gain": ni,
        "internal_value": ni,
        "internal_weight": ni,
        "internal_count": ni,
        "leaf_value": nl,
        "leaf_weight": nl,
        "leaf_count": nl,
    }
    parsed = _tree_arrays(d, where, lens, nl)
    if not all(0 <= f <= n_features - 1 for f in parsed["split_feature"]):
        raise BoosterTextError(
            f"{where}.split_feature: a feature index outside 0..{n_features - 1}"
        )
    if not all(0 <= t <= 15 for t in parsed["decision_type"]):
        raise BoosterTextError(f"{where}.decision_type: a value outside 0..15")
    if not all(math.isfinite(x) for x in parsed["leaf_value"]):
        raise BoosterTextError(f"{where}.leaf_value: not finite")
    _floats(d["shrinkage"], f"{where}.shrinkage")
    _check_children(parsed, where, ni, nl)
    _check_categorical(d, parsed, where, nc)


def _tree_arrays(
    d: dict[str, str], where: str, lens: dict[str, int], nl: int
) -> dict[str, list[Any]]:
    """Each array of a tree read and checked against its expected length."""
    parsed: dict[str, list[Any]] = {}
    for k, n in lens.items():
        if k not in d:
            if k in (
                "split_gain",
                "internal_value",
                "internal_weight",
                "internal_count",
                "leaf_weight",
                "leaf_count",
            ):
                continue
        conv = (
            _ints
            if k
            in (
                "split_feature",
                "decision_type",
                "left_child",
                "right_child",
                "internal_count",
                "leaf_count",
            )
            else _floats
        )
        vals = conv(d[k], f"{where}.{k}")
        if len(vals) != n and not (
            nl == 1 and k in ("leaf_weight", "leaf_count") and len(vals) == 0
        ):
            raise BoosterTextError(
                f"{where}.{k}: {len(vals)} values for {nl} leaves (expected {n})"
            )
        parsed[k] = vals
    return parsed


def _check_children(parsed: dict[str, list[Any]], where: str, ni: int, nl: int) -> None:
    """Internal nodes 1..ni-1 and leaves 0..nl-1 each exactly once; node i's children come after it."""
    seen_int = [0] * max(ni, 1)
    seen_leaf = [0] * nl
    for i in range(ni):
        for c in (parsed["left_child"][i], parsed["right_child"][i]):
            if c >= 0:
                if not (i < c < ni):
                    raise BoosterTextError(
                        f"{where}.left_child/right_child: node {i} points to {c}"
                    )
                seen_int[c] += 1
            else:
                leaf = ~c
                if not (0 <= leaf < nl):
                    raise BoosterTextError(
                        f"{where}.left_child/right_child: node {i} points to leaf {leaf} of {nl}"
                    )
                seen_leaf[leaf] += 1
    if ni and (
        seen_int[0] != 0 or any(n != 1 for n in seen_int[1:]) or any(n != 1 for n in seen_leaf)
    ):
        raise BoosterTextError(f"{where}.left_child/right_child: the nodes do not form one tree")


def _check_categorical(
    d: dict[str, str], parsed: dict[str, list[Any]], where: str, nc: int
) -> None:
    """Categorical splits: boundaries and thresholds consistent with num_cat."""
    cats = [i for i, t in enumerate(parsed["decision_type"]) if t & 1]
    if nc or cats:
        if "cat_boundaries" not in d or "cat_threshold" not in d:
            raise BoosterTextError(
                f"{where}: categorical splits without cat_boundaries / cat_threshold"
            )
        cb = _ints(d["cat_boundaries"], f"{where}.cat_boundaries")
        ct = _ints(d["cat_threshold"], f"{where}.cat_threshold")
        if (
            len(cb) != nc + 1
            or cb[0] != 0
            or any(b > a for a, b in zip(cb[1:], cb))
            or cb[-1] != len(ct)
        ):
            raise BoosterTextError(
                f"{where}.cat_boundaries: inconsistent with num_cat / cat_threshold"
            )
        if len(cats) != nc or any(
            not (0 <= parsed["threshold"][i] < nc and float(parsed["threshold"][i]).is_integer())
            for i in cats
        ):
            raise BoosterTextError(
                f"{where}.threshold: a categorical split's index outside 0..num_cat-1"
            )


def check_model_text(text: str, n_features: int | None = None) -> str:
    """The text LightGBM may read (``tree_sizes`` dropped), or ``BoosterTextError`` saying where it is wrong.

    ``n_features``: the width the booster must have (``max_feature_idx + 1``), when known."""
    if not isinstance(text, str) or not text.startswith("tree\n"):
        raise BoosterTextError("does not start with 'tree' (not a LightGBM model text)")
    end = text.find("\nend of trees")
    if end < 0:
        raise BoosterTextError("no 'end of trees' line (truncated?)")
    body, tail = text[: end + 1], text[end + 1 :]
    lines = body.split("\n")
    # header: up to the first Tree= line
    first = next((i for i, ln in enumerate(lines) if ln.startswith("Tree=")), None)
    if first is None:
        raise BoosterTextError("no Tree= line: a model without trees")
    head = _kv(lines[1:first], "header")
    for k in (*_HEADER_INT, "version", "feature_names", "feature_infos"):
        if k not in head:
            raise BoosterTextError(f"header.{k} missing")
    hv = {k: _ints(head[k], f"header.{k}") for k in _HEADER_INT}
    if any(len(v) != 1 for v in hv.values()):
        raise BoosterTextError(
            "header: num_class / num_tree_per_iteration / label_index / max_feature_idx must be one integer each"
        )
    nclass, npi, _, mfi = (hv[k][0] for k in _HEADER_INT)
    if not (1 <= nclass <= 1000 and 1 <= npi <= 1000 and 0 <= mfi < 1 << 24):
        raise BoosterTextError(
            "header: num_class / num_tree_per_iteration / max_feature_idx out of range"
        )
    nf = mfi + 1
    if n_features is not None and nf != n_features:
        raise BoosterTextError(f"header.max_feature_idx: {nf} features, expected {n_features}")
    if len(head["feature_names"].split()) != nf or len(head["feature_infos"].split()) != nf:
        raise BoosterTextError(
            "header.feature_names / feature_infos: not max_feature_idx + 1 entries"
        )
    # trees
    blocks: list[list[str]] = []
    for ln in lines[first:]:
        if ln.startswith("Tree="):
            m = _TREE_LINE.match(ln)
            if not m or int(m.group(1)) != len(blocks):
                raise BoosterTextError(f"tree {len(blocks)}: header line {ln[:30]!r} out of order")
            blocks.append([])
        else:
            blocks[-1].append(ln)
    if len(blocks) % npi:
        raise BoosterTextError(
            f"{len(blocks)} trees is not a multiple of num_tree_per_iteration={npi}"
        )
    for i, blk in enumerate(blocks):
        _check_tree(_kv(blk, f"tree {i}"), f"tree {i}", nf)
    if "tree_sizes" in head:
        _ints(head["tree_sizes"], "header.tree_sizes")
        drop = next(i for i, ln in enumerate(lines) if ln.startswith("tree_sizes="))
        lines = lines[:drop] + lines[drop + 1 :]
    return "\n".join(lines) + tail


# The child parses with lib_lightgbm's own loader through ctypes when the library path is given (argv[1]),
# which spares it the lightgbm package's import (pandas, scikit-learn: ~1-2 s); else with lightgbm.Booster.
_CHILD = (
    "import ctypes, json, sys\n"
    "texts = json.loads(sys.stdin.read())\n"
    "if len(sys.argv) > 1:\n"
    "    lib = ctypes.cdll.LoadLibrary(sys.argv[1])\n"
    "    lib.LGBM_GetLastError.restype = ctypes.c_char_p\n"
    "    for t in texts:\n"
    "        h, n = ctypes.c_void_p(), ctypes.c_int(0)\n"
    "        if lib.LGBM_BoosterLoadModelFromString(ctypes.c_char_p(t.encode()), ctypes.byref(n), ctypes.byref(h)) != 0:\n"
    "            sys.exit('LightGBMError: ' + lib.LGBM_GetLastError().decode(errors='replace'))\n"
    "        lib.LGBM_BoosterFree(h)\n"
    "else:\n"
    "    import lightgbm as lgb\n"
    "    for t in texts:\n"
    "        lgb.Booster(model_str=t)\n"
    "print('ok', len(texts))\n"
)


def _child_args() -> list[str]:
    """The probe child's argv: lib_lightgbm's path when ``lgbm_capi`` can load it."""
    try:
        lgbm_capi.library()
        return [str(lgbm_capi.library_path())]
    except lgbm_capi.LibraryUnavailable:
        return []


def probe(texts: Iterable[str], timeout: float = PROBE_TIMEOUT_S) -> None:
    """Parse ``texts`` with LightGBM in a child process first; ``BoosterTextError`` if it fails, dies or hangs."""
    todo = []
    for t in texts:
        h = hashlib.sha256(t.encode()).hexdigest()
        if h not in _probed:
            todo.append((h, t))
    if not todo:
        return
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    try:
        r = subprocess.run(
            [sys.executable, "-c", _CHILD, *_child_args()],
            input=json.dumps([t for _, t in todo]),
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
    except subprocess.TimeoutExpired:
        raise BoosterTextError(
            f"LightGBM did not finish parsing it within {timeout:g} s (in a child process)"
        ) from None
    if r.returncode != 0 or not (r.stdout.strip().splitlines() or [""])[-1].startswith("ok"):
        how = f"killed by signal {-r.returncode}" if r.returncode < 0 else f"exit {r.returncode}"
        last = (r.stderr.strip().splitlines() or [""])[-1][:300]
        raise BoosterTextError(f"LightGBM could not parse it in a child process ({how}): {last}")
    _probed.update(h for h, _ in todo)


def safe_boosters(
    texts: list[str], n_features: list[int | None] | None = None, *, do_probe: bool = True
) -> list[Any]:
    """A booster of each text (``lgbm_capi.load_booster``: a ``CBooster`` on LightGBM's C API, or ``lightgbm.Booster``
    if lib_lightgbm cannot be used), after ``check_model_text`` and (by default) ``probe``."""
    widths = n_features or [None] * len(texts)
    checked = [check_model_text(t, w) for t, w in zip(texts, widths)]
    if do_probe:
        probe(checked)
    return [lgbm_capi.load_booster(t) for t in checked]


def probe_enabled() -> bool:
    """The child-process probe runs unless ``EARLYEVAL_BOOSTER_PROBE=0`` (the structural check always runs)."""
    return env_flag("EARLYEVAL_BOOSTER_PROBE", True)
