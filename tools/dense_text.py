"""A dense text family, for measurement: the five blocks of the ``text`` family, each the average of WordLlama's
static token vectors (``wordllama`` 0.4, weights in its wheel), streamed as a running sum and count.

A measurement tool, not package code: wordllama is not in requirements.lock.  ``tools/encoder_compare.py`` registers
the family (``earlyeval.features.register_family``, the public plugin registry) and compares it with TF-IDF + SVD;
the table and the decision: docs/architecture.md, "Feature families" (the ``text`` paragraph).

- Blocks: those of ``earlyeval.features.text`` (``BLOCKS``), read the same way: the task prompt, each step's
  ``action`` and its ``observation`` cut by the text family's own ``clip`` to its first and last ``obs_chars``.
- A block's value is the mean of the token vectors of its text (what ``WordLlamaInference.embed`` computes, norm
  off).  A cumulative block is the mean over every token of the steps so far, each step tokenized on its own: its
  state is a sum and a count, so ``update`` costs the same at step 5 and step 500.
- Width: WordLlama's matryoshka truncation to ``dim`` = 64 per block (5 x 64 = 320, the text family's width).
  Nothing is learned from the runs, so the family is fold-free: computed once per dataset, like behaviour.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from earlyeval.core.trajectory import Step, Trajectory
from earlyeval.features.base import FOLD_FREE, FamilyBase, RunContext
from earlyeval.features.text import BLOCKS, clip

CUMULATIVE = ("actions", "observations")


@dataclass(frozen=True)
class Encoder:
    """WordLlama's tokenizer and its static token vectors, truncated to ``dim`` columns (float64 for the sums)."""

    config: str
    dim: int
    version: str
    tokenizer: Any
    vectors: np.ndarray  # (vocabulary, dim)
    sha256: str  # of the float32 vectors as the wheel ships them, truncated

    def ids(self, text: str) -> np.ndarray:
        """Token ids of ``text``, no special tokens, no truncation (out-of-range ids clamped, as wordllama does)."""
        if not text:
            return np.zeros(0, dtype=np.int64)
        ids = np.asarray(self.tokenizer.encode(text, add_special_tokens=False).ids, dtype=np.int64)
        return np.clip(ids, 0, len(self.vectors) - 1)

    def sum(self, text: str) -> tuple[np.ndarray, int]:
        """(sum of the token vectors, token count) of ``text``."""
        ids = self.ids(text)
        return self.vectors[ids].sum(axis=0), len(ids)

    def mean(self, text: str) -> np.ndarray:
        s, n = self.sum(text)
        return s / n if n else np.zeros(self.dim)


def _import_wordllama() -> Any:
    """wordllama, imported without keeping its import-time ``logging.basicConfig(level=INFO)`` on the root logger."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    import wordllama

    root.handlers[:] = handlers
    root.setLevel(level)
    return wordllama


@lru_cache(maxsize=4)
def load_encoder(config: str = "l2_supercat", dim: int = 64) -> Encoder:
    """The wheel's own weights and tokenizer, never a download.

    wordllama 0.4.0.post1 looks for the tokenizer in the package's ``tokenizer/`` folder, but the wheel ships it in
    ``tokenizers/``; missing there, it would fetch it from a hub.  The package folder given as the cache finds both
    files (``weights/``, ``tokenizers/``), and ``disable_download`` makes a missing one an error, never a fetch."""
    wordllama = _import_wordllama()
    pkg = Path(wordllama.__file__).parent
    wl = wordllama.WordLlama.load(
        config, cache_dir=pkg, dim=256, trunc_dim=dim, disable_download=True
    )
    tok = wl.tokenizer
    tok.no_padding()
    tok.no_truncation()
    emb = np.ascontiguousarray(wl.embedding, dtype=np.float32)
    return Encoder(
        config,
        dim,
        wordllama.__version__,
        tok,
        emb.astype(np.float64),
        hashlib.sha256(emb.tobytes()).hexdigest(),
    )


class RunningMean:
    """The mean of a growing bag of token vectors: their sum and count."""

    __slots__ = ("sum", "n")

    def __init__(self, dim: int) -> None:
        self.sum = np.zeros(dim)
        self.n = 0

    def add(self, s: np.ndarray, n: int) -> None:
        if n:
            self.sum += s
            self.n += n

    def value(self) -> np.ndarray:
        return self.sum / self.n if self.n else np.zeros_like(self.sum)


class DenseTextState:
    __slots__ = ("prompt", "actions", "observations", "action_last", "observation_last")


class DenseTextFamily(FamilyBase):
    name: ClassVar[str] = "dense_text"
    fit_scope: ClassVar[str] = FOLD_FREE  # fixed weights, truncated: nothing learned from the runs
    needs_task: ClassVar[bool] = True

    def __init__(self, config: str = "l2_supercat", dim: int = 64, obs_chars: int = 1500) -> None:
        self.config = config
        self.dim = int(dim)
        self.obs_chars = int(obs_chars)
        self.encoder = load_encoder(config, self.dim)

    def check_context(self, ctx: RunContext) -> str | None:
        return None if ctx.prompt else "no task prompt: the prompt text block is zero"

    def fit(self, trajs: list[Trajectory], contexts: list[RunContext]) -> "DenseTextFamily":
        return self

    @property
    def names(self) -> list[str]:
        return [f"dtx_{b}_{i}" for b in BLOCKS for i in range(self.dim)]

    # ------------------------------------------------------------ streaming
    def start(self, ctx: RunContext) -> DenseTextState:
        s = DenseTextState()
        s.prompt = self.encoder.mean(ctx.prompt)
        s.actions, s.observations = RunningMean(self.dim), RunningMean(self.dim)
        s.action_last, s.observation_last = np.zeros(self.dim), np.zeros(self.dim)
        return s

    def update(self, s: DenseTextState, step: Step) -> None:
        for block, text in (
            ("action", step.action or ""),
            ("observation", clip(step.observation or "", self.obs_chars)),
        ):
            vec, n = self.encoder.sum(text)
            getattr(s, block + "s").add(vec, n)
            setattr(s, block + "_last", vec / n if n else np.zeros(self.dim))

    def values(self, s: DenseTextState) -> np.ndarray:
        return np.concatenate(
            [s.prompt, s.actions.value(), s.action_last, s.observations.value(), s.observation_last]
        )

    # -------------------------------------------------------- serialization
    def get_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The settings and which weights: the vectors stay in the wheel (16 MB), named by their hash."""
        e = self.encoder
        return {
            "config": self.config,
            "dim": self.dim,
            "obs_chars": self.obs_chars,
            "wordllama": e.version,
            "sha256": e.sha256,
        }, {}

    @classmethod
    def from_state(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> "DenseTextFamily":
        fam = cls(config=meta["config"], dim=meta["dim"], obs_chars=meta["obs_chars"])
        if fam.encoder.sha256 != meta["sha256"]:
            raise ValueError(
                f"dense_text: the installed wordllama {fam.encoder.version} ships other {meta['config']} "
                f"weights than the saved family's (wordllama {meta['wordllama']}, sha256 {meta['sha256'][:12]}...)"
            )
        return fam
