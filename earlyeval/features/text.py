"""Textual features: five TF-IDF + truncated-SVD blocks, fitted inside the training fold.

Each block has its own vocabulary, IDF and SVD, and streams in time independent of the prefix length. The blocks,
the vocabulary rule and the streaming update: docs/architecture.md, "Feature families".
"""

from __future__ import annotations

from earlyeval.core.extras import require

require("train", "the text family (TF-IDF + TruncatedSVD)", ("sklearn",))

import re
from collections import Counter, defaultdict
from typing import Any, ClassVar

import numpy as np
from sklearn.decomposition import TruncatedSVD

from earlyeval.core.trajectory import Step, Trajectory
from earlyeval.features.base import FOLD_FITTED, FamilyBase, FamilyResources, RunContext

_WORD = re.compile(r"[a-z_][a-z0-9_]{1,30}")
BLOCKS = ("prompt", "actions", "action_last", "observations", "observation_last")


def clip(text: str, n: int) -> str:
    if len(text) <= 2 * n:
        return text
    return text[:n] + "\n" + text[-n:]


def tokenize(text: str) -> list[str]:
    """Lower-cased word unigrams and bigrams."""
    words = _WORD.findall(text.lower())
    return words + [a + " " + b for a, b in zip(words, words[1:])]


class TokenCache:
    """Token ids of every step of a set of trajectories, tokenized once.

    Evaluation fits the text family in many folds over the same trajectories;
    the cache keeps each step's unigrams and bigrams as integer ids of one
    process-wide interning table, so no fold tokenizes again.  It is a cache,
    not a learned vocabulary: a fold's vocabulary is chosen from its training
    documents only.  A model directory never contains it.
    """

    def __init__(self, obs_chars: int) -> None:
        self.obs_chars = obs_chars
        self.terms: list[str] = []
        self.ids: dict[str, int] = {}
        self._steps: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._prompts: dict[str, np.ndarray] = {}
        self._keep: list[Step] = []  # keeps steps alive so id() keys stay unique

    def _intern(self, toks: list[str]) -> np.ndarray:
        ids = self.ids
        out = np.empty(len(toks), dtype=np.int32)
        for k, t in enumerate(toks):
            j = ids.get(t)
            if j is None:
                j = ids[t] = len(self.terms)
                self.terms.append(t)
            out[k] = j
        return out

    def step(self, step: Step) -> tuple[np.ndarray, np.ndarray]:
        key = id(step)
        got = self._steps.get(key)
        if got is None:
            got = (
                self._intern(tokenize(step.action or "")),
                self._intern(tokenize(clip(step.observation or "", self.obs_chars))),
            )
            self._steps[key] = got
            self._keep.append(step)
        return got

    def prompt(self, text: str) -> np.ndarray:
        got = self._prompts.get(text)
        if got is None:
            got = self._prompts[text] = self._intern(tokenize(text))
        return got


class Block:
    """Vocabulary, IDF and SVD components of one text block."""

    def __init__(self, vocab: dict[str, int], idf: np.ndarray, components: np.ndarray):
        self.vocab = vocab
        self.idf = idf.astype(np.float64)
        self.components = components  # (k, V)
        self.dim = components.shape[0]
        self.lookup: np.ndarray | None = None  # TokenCache id -> vocabulary index (or -1)

    @property
    def components(self) -> np.ndarray:
        """SVD components, (k, V): a view of ``rows``."""
        return self.rows.T

    @components.setter
    def components(self, value: np.ndarray) -> None:
        # Stored term-major, (V, k) C-contiguous: a projection gathers the rows of the terms a text
        # holds, contiguous in memory (2-3x faster than gathering columns of (k, V)).  ``w @ rows[idx]``
        # is bit for bit ``components[:, idx] @ w``: numpy lays the column gather out as exactly this
        # buffer and makes the same BLAS call on it.
        self.rows = np.ascontiguousarray(np.asarray(value, dtype=np.float64).T)

    def bind(self, cache: TokenCache) -> None:
        lk = np.full(len(cache.terms) + 1, -1, dtype=np.int64)
        for w, j in self.vocab.items():
            g = cache.ids.get(w)
            if g is not None:
                lk[g] = j
        self.lookup = lk

    def indices(self, tokens: list[str] | Counter) -> tuple[np.ndarray, np.ndarray]:
        """(vocabulary indices ascending, counts) of a token list, or of its Counter: the streaming path.

        Passing the Counter lets the two blocks of one text (all actions, latest action) count it once."""
        c = tokens if isinstance(tokens, Counter) else Counter(tokens)
        v = self.vocab
        hits = c.keys() & v.keys()  # the intersection runs in C; iterating it twice gives one order
        if not hits:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        idx = np.fromiter(map(v.__getitem__, hits), dtype=np.int64, count=len(hits))
        cnt = np.fromiter(map(c.__getitem__, hits), dtype=np.float64, count=len(hits))
        order = np.argsort(idx)  # vocabulary indices are unique: the order is fully determined
        return idx[order], cnt[order]

    def indices_from_ids(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The same from cached token ids: the batch path."""
        j = self.lookup[np.minimum(ids, len(self.lookup) - 1)]
        j = j[j >= 0]
        if j.size == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        u, c = np.unique(j, return_counts=True)
        return u, c.astype(np.float64)

    def project(self, idx: np.ndarray, cnt: np.ndarray) -> np.ndarray:
        """SVD projection of an l2-normalized tf-idf vector given by (indices, counts)."""
        if idx.size == 0:
            return np.zeros(self.dim)
        w = cnt * self.idf[idx]
        norm = np.sqrt(np.dot(w, w))
        return w @ self.rows[idx] / norm


class CumulativeBlockState:
    """Running tf-idf of a growing document, kept as counts + projection + squared norm."""

    __slots__ = ("counts", "proj", "sq")

    def __init__(self, dim: int, vocab_size: int):
        self.counts = np.zeros(vocab_size)
        self.proj = np.zeros(dim)
        self.sq = 0.0

    def add(self, block: Block, idx: np.ndarray, cnt: np.ndarray) -> None:
        if idx.size == 0:
            return
        idf = block.idf[idx]
        old = self.counts[idx]
        new = old + cnt
        self.sq += float(np.dot(new * idf, new * idf) - np.dot(old * idf, old * idf))
        self.proj += (cnt * idf) @ block.rows[idx]
        self.counts[idx] = new

    def value(self) -> np.ndarray:
        return self.proj / np.sqrt(self.sq) if self.sq > 0 else np.zeros_like(self.proj)


class TextState:
    __slots__ = ("prompt", "actions", "observations", "action_last", "observation_last")


class TextFamily(FamilyBase):
    name: ClassVar[str] = "text"
    fit_scope: ClassVar[str] = FOLD_FITTED  # vocabulary, IDF and SVD from the training fold's runs
    needs_task: ClassVar[bool] = True

    def __init__(
        self,
        dims: dict[str, int] | None = None,
        min_df: int = 5,
        min_agents: int = 2,
        max_features: int = 20000,
        obs_chars: int = 1500,
        max_step_docs: int = 20000,
        seed: int = 0,
        cache: TokenCache | None = None,
    ):
        self.dims = dims or {
            "prompt": 64,
            "actions": 64,
            "action_last": 64,
            "observations": 64,
            "observation_last": 64,
        }
        self.min_df = min_df
        self.min_agents = min_agents
        self.max_features = max_features
        self.obs_chars = obs_chars
        self.max_step_docs = max_step_docs
        self.seed = seed
        self.cache = cache
        self.blocks: dict[str, Block] = {}

    @classmethod
    def from_config(cls, resources: FamilyResources) -> "TextFamily":
        return cls(seed=resources.seed, **dict(resources.params.get(cls.name, {})))

    def check_context(self, ctx: RunContext) -> str | None:
        return None if ctx.prompt else "no task prompt: the prompt text block is zero"

    # ------------------------------------------------------------------ fit
    def fit(self, trajs: list[Trajectory], contexts: list[RunContext]) -> "TextFamily":
        cache = (
            self.cache
            if self.cache is not None and self.cache.obs_chars == self.obs_chars
            else TokenCache(self.obs_chars)
        )
        rng = np.random.default_rng(self.seed)
        docs: dict[str, list[np.ndarray]] = defaultdict(list)
        agents: dict[str, list[str]] = defaultdict(list)
        step_refs = [(i, j) for i, t in enumerate(trajs) for j in range(len(t.steps))]
        if len(step_refs) > self.max_step_docs:
            keep = np.sort(rng.choice(len(step_refs), self.max_step_docs, replace=False))
            step_refs = [step_refs[k] for k in keep]
        step_set = set(step_refs)
        for i, (t, ctx) in enumerate(zip(trajs, contexts)):
            docs["prompt"].append(cache.prompt(ctx.prompt))
            agents["prompt"].append(t.agent)
            acts, obss = [], []
            for j, st in enumerate(t.steps):
                a, o = cache.step(st)
                acts.append(a)
                obss.append(o)
                if (i, j) in step_set:
                    docs["action_last"].append(a)
                    docs["observation_last"].append(o)
                    agents["action_last"].append(t.agent)
                    agents["observation_last"].append(t.agent)
            docs["actions"].append(np.concatenate(acts) if acts else np.zeros(0, np.int32))
            docs["observations"].append(np.concatenate(obss) if obss else np.zeros(0, np.int32))
            agents["actions"].append(t.agent)
            agents["observations"].append(t.agent)
        self.blocks = {b: self._fit_block(docs[b], agents[b], self.dims[b], cache) for b in BLOCKS}
        if self.cache is not None:
            for blk in self.blocks.values():
                blk.bind(self.cache)
        return self

    def _fit_block(
        self, docs: list[np.ndarray], agents: list[str], dim: int, cache: TokenCache
    ) -> Block:
        from scipy.sparse import csr_matrix

        G = len(cache.terms) + 1
        uniq = [np.unique(d) for d in docs]
        df = np.bincount(np.concatenate(uniq) if uniq else np.zeros(0, np.int64), minlength=G)
        per_agent: dict[str, list[np.ndarray]] = defaultdict(list)
        for u, a in zip(uniq, agents):
            per_agent[a].append(u)
        n_agents_term = np.zeros(G, dtype=np.int64)
        for a, us in per_agent.items():
            n_agents_term[np.unique(np.concatenate(us))] += 1
        need_agents = min(self.min_agents, len(per_agent))
        cand = np.flatnonzero((df >= self.min_df) & (n_agents_term >= need_agents))
        # most frequent first; ties broken by the term itself, so the choice does not depend on data order
        order = sorted(cand.tolist(), key=lambda g: (-int(df[g]), cache.terms[g]))[
            : self.max_features
        ]
        terms = sorted(cache.terms[g] for g in order)
        vocab = {w: i for i, w in enumerate(terms)}
        n = len(docs)
        idf = (
            np.log((1 + n) / (1 + np.asarray([df[cache.ids[w]] for w in terms], dtype=np.float64)))
            + 1.0
        )
        block = Block(vocab, idf if len(terms) else np.ones(1), np.zeros((dim, max(len(terms), 1))))
        block.bind(cache)
        rows, cols, vals = [], [], []
        for r, d in enumerate(docs):
            idx, cnt = (
                block.indices_from_ids(d) if len(terms) else (np.zeros(0, np.int64), np.zeros(0))
            )
            if idx.size:
                rows.append(np.full(idx.size, r))
                cols.append(idx)
                vals.append(cnt * idf[idx])
        if not terms or not rows or n < 3 or len(terms) < 2:
            block.lookup = None
            return block
        X = csr_matrix(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
            shape=(n, len(terms)),
        )
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        norms[norms == 0] = 1.0
        X = csr_matrix(X.multiply(1.0 / norms[:, None]))
        k = max(1, min(dim, len(terms) - 1, n - 1))
        svd = TruncatedSVD(n_components=k, random_state=self.seed, algorithm="randomized", n_iter=5)
        svd.fit(X)
        comps = np.zeros((dim, len(terms)))
        comps[:k] = svd.components_
        block.components = comps
        block.lookup = None
        return block

    # ------------------------------------------------------------ streaming
    @property
    def names(self) -> list[str]:
        return [f"txt_{b}_{i}" for b in BLOCKS for i in range(self.dims[b])]

    def _idx(
        self, block: Block, text_ids: np.ndarray | None, tokens: list[str] | Counter | None
    ) -> tuple[np.ndarray, np.ndarray]:
        if text_ids is not None and block.lookup is not None:
            return block.indices_from_ids(text_ids)
        return block.indices(tokens if tokens is not None else [])

    def start(self, ctx: RunContext) -> TextState:
        s = TextState()
        pb = self.blocks["prompt"]
        if self.cache is not None and pb.lookup is not None:
            s.prompt = pb.project(*pb.indices_from_ids(self.cache.prompt(ctx.prompt)))
        else:
            s.prompt = pb.project(*pb.indices(tokenize(ctx.prompt)))
        s.actions = CumulativeBlockState(
            self.blocks["actions"].dim, len(self.blocks["actions"].idf)
        )
        s.observations = CumulativeBlockState(
            self.blocks["observations"].dim, len(self.blocks["observations"].idf)
        )
        s.action_last = np.zeros(self.blocks["action_last"].dim)
        s.observation_last = np.zeros(self.blocks["observation_last"].dim)
        return s

    def update(self, s: TextState, step: Step) -> None:
        if self.cache is not None and self.blocks["actions"].lookup is not None:
            a_ids, o_ids = self.cache.step(step)
            a = o = None
        else:
            a_ids = o_ids = None
            a = Counter(tokenize(step.action or ""))  # counted once, read by two blocks each
            o = Counter(tokenize(clip(step.observation or "", self.obs_chars)))
        for name, ids, toks in (("actions", a_ids, a), ("observations", o_ids, o)):
            b = self.blocks[name]
            getattr(s, name).add(b, *self._idx(b, ids, toks))
        bl = self.blocks["action_last"]
        s.action_last = bl.project(*self._idx(bl, a_ids, a))
        bo = self.blocks["observation_last"]
        s.observation_last = bo.project(*self._idx(bo, o_ids, o))

    def values(self, s: TextState) -> np.ndarray:
        return np.concatenate(
            [s.prompt, s.actions.value(), s.action_last, s.observations.value(), s.observation_last]
        )

    # -------------------------------------------------------- serialization
    def get_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        meta = {
            "dims": self.dims,
            "min_df": self.min_df,
            "min_agents": self.min_agents,
            "max_features": self.max_features,
            "obs_chars": self.obs_chars,
            "seed": self.seed,
            "vocab": {
                b: sorted(self.blocks[b].vocab, key=self.blocks[b].vocab.get) for b in BLOCKS
            },
        }
        arrays = {}
        for b in BLOCKS:
            arrays[f"{b}.idf"] = self.blocks[b].idf
            arrays[f"{b}.components"] = np.ascontiguousarray(self.blocks[b].components)
        return meta, arrays

    @classmethod
    def from_state(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> "TextFamily":
        fam = cls(
            dims=meta["dims"],
            min_df=meta["min_df"],
            min_agents=meta["min_agents"],
            max_features=meta["max_features"],
            obs_chars=meta["obs_chars"],
            seed=meta["seed"],
        )
        for b in BLOCKS:
            vocab = {w: i for i, w in enumerate(meta["vocab"][b])}
            fam.blocks[b] = Block(vocab, arrays[f"{b}.idf"], arrays[f"{b}.components"])
        return fam
