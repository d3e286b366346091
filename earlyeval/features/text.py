"""Textual features: five TF-IDF + truncated-SVD blocks, fitted inside the training fold.

Blocks: the task prompt; all actions so far; the latest action; all observations
so far; the latest observation.  Each block has its own vocabulary (word
unigrams and bigrams seen in at least ``min_df`` training documents and, by
default, used by at least ``min_agents`` training agents, so that one agent's
output format cannot fill the vocabulary), its own IDF and its own SVD.

Streaming: a cumulative block keeps its raw term counts, the running SVD
projection of the tf-idf vector and its squared norm; one step changes only the
terms it contains, so an update costs the same at step 5 and step 500.  The
value is ``projection / norm``, exactly ``TruncatedSVD.transform`` of the
l2-normalized tf-idf vector of the concatenated text.

Long observations are cut to their first and last ``obs_chars`` characters
before tokenizing: that keeps the per-step cost bounded.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Any, ClassVar

import numpy as np
from sklearn.decomposition import TruncatedSVD

from ..trajectory import Step, Trajectory
from .base import RunContext

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


class Block:
    """Vocabulary, IDF and SVD components of one text block."""

    def __init__(self, vocab: dict[str, int], idf: np.ndarray, components: np.ndarray):
        self.vocab = vocab
        self.idf = idf.astype(np.float64)
        self.components = components.astype(np.float64)  # (k, V)
        self.dim = components.shape[0]

    def indices(self, tokens: list[str]) -> tuple[np.ndarray, np.ndarray]:
        c = Counter(tokens)
        idx, cnt = [], []
        for tok, n in c.items():
            j = self.vocab.get(tok)
            if j is not None:
                idx.append(j)
                cnt.append(n)
        return np.asarray(idx, dtype=np.int64), np.asarray(cnt, dtype=np.float64)

    def project(self, idx: np.ndarray, cnt: np.ndarray) -> np.ndarray:
        """SVD projection of an l2-normalized tf-idf vector given by (indices, counts)."""
        if idx.size == 0:
            return np.zeros(self.dim)
        w = cnt * self.idf[idx]
        norm = np.sqrt(np.dot(w, w))
        return self.components[:, idx] @ w / norm


class CumulativeBlockState:
    """Running tf-idf of a growing document, kept as projection + squared norm."""

    __slots__ = ("counts", "proj", "sq")

    def __init__(self, dim: int):
        self.counts: dict[int, float] = {}
        self.proj = np.zeros(dim)
        self.sq = 0.0

    def add(self, block: Block, idx: np.ndarray, cnt: np.ndarray) -> None:
        if idx.size == 0:
            return
        idf = block.idf[idx]
        old = np.fromiter((self.counts.get(int(j), 0.0) for j in idx), dtype=np.float64, count=idx.size)
        new = old + cnt
        self.sq += float(np.dot(new * idf, new * idf) - np.dot(old * idf, old * idf))
        self.proj += block.components[:, idx] @ (cnt * idf)
        for j, n in zip(idx.tolist(), new.tolist()):
            self.counts[j] = n

    def value(self) -> np.ndarray:
        return self.proj / np.sqrt(self.sq) if self.sq > 0 else np.zeros_like(self.proj)


class TextState:
    __slots__ = ("prompt", "actions", "observations", "action_last", "observation_last")


class TextFamily:
    name: ClassVar[str] = "text"

    def __init__(self, dims: dict[str, int] | None = None, min_df: int = 5, min_agents: int = 2,
                 max_features: int = 20000, obs_chars: int = 1500, max_step_docs: int = 20000, seed: int = 0):
        self.dims = dims or {"prompt": 64, "actions": 64, "action_last": 64, "observations": 64, "observation_last": 64}
        self.min_df = min_df
        self.min_agents = min_agents
        self.max_features = max_features
        self.obs_chars = obs_chars
        self.max_step_docs = max_step_docs
        self.seed = seed
        self.blocks: dict[str, Block] = {}

    # ------------------------------------------------------------------ fit
    def _step_tokens(self, step: Step) -> tuple[list[str], list[str]]:
        return tokenize(step.action or ""), tokenize(clip(step.observation or "", self.obs_chars))

    def fit(self, trajs: list[Trajectory], contexts: list[RunContext]) -> "TextFamily":
        rng = np.random.default_rng(self.seed)
        docs: dict[str, list[Counter]] = defaultdict(list)
        agents: dict[str, list[str]] = defaultdict(list)
        step_refs = [(i, j) for i, t in enumerate(trajs) for j in range(len(t.steps))]
        if len(step_refs) > self.max_step_docs:
            keep = set(rng.choice(len(step_refs), self.max_step_docs, replace=False).tolist())
            step_refs = [r for k, r in enumerate(step_refs) if k in keep]
        step_set = set(step_refs)
        for i, (t, ctx) in enumerate(zip(trajs, contexts)):
            docs["prompt"].append(Counter(tokenize(ctx.prompt)))
            agents["prompt"].append(t.agent)
            acts, obss = Counter(), Counter()
            for j, s in enumerate(t.steps):
                a, o = self._step_tokens(s)
                acts.update(a)
                obss.update(o)
                if (i, j) in step_set:
                    docs["action_last"].append(Counter(a))
                    docs["observation_last"].append(Counter(o))
                    agents["action_last"].append(t.agent)
                    agents["observation_last"].append(t.agent)
            docs["actions"].append(acts)
            docs["observations"].append(obss)
            agents["actions"].append(t.agent)
            agents["observations"].append(t.agent)
        self.blocks = {b: self._fit_block(docs[b], agents[b], self.dims[b]) for b in BLOCKS}
        return self

    def _fit_block(self, docs: list[Counter], agents: list[str], dim: int) -> Block:
        from scipy.sparse import csr_matrix

        df: Counter = Counter()
        term_agents: dict[str, set[str]] = defaultdict(set)
        for d, a in zip(docs, agents):
            df.update(d.keys())
            for term in d:
                term_agents[term].add(a)
        n_agents = len(set(agents))
        need_agents = min(self.min_agents, n_agents)
        terms = [w for w, n in df.items() if n >= self.min_df and len(term_agents[w]) >= need_agents]
        terms.sort(key=lambda w: (-df[w], w))
        terms = sorted(terms[: self.max_features])
        vocab = {w: i for i, w in enumerate(terms)}
        n = len(docs)
        idf = np.log((1 + n) / (1 + np.asarray([df[w] for w in terms], dtype=np.float64))) + 1.0
        rows, cols, vals = [], [], []
        for r, d in enumerate(docs):
            for w, c in d.items():
                j = vocab.get(w)
                if j is not None:
                    rows.append(r)
                    cols.append(j)
                    vals.append(c * idf[j])
        X = csr_matrix((vals, (rows, cols)), shape=(n, len(terms)), dtype=np.float64)
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        norms[norms == 0] = 1.0
        X = csr_matrix(X.multiply(1.0 / norms[:, None]))
        k = max(1, min(dim, len(terms) - 1, n - 1))
        if len(terms) < 2 or n < 3:
            comps = np.zeros((dim, max(len(terms), 1)))
        else:
            svd = TruncatedSVD(n_components=k, random_state=self.seed, algorithm="randomized", n_iter=5)
            svd.fit(X)
            comps = np.zeros((dim, len(terms)))
            comps[:k] = svd.components_
        return Block(vocab, idf if len(terms) else np.ones(1), comps)

    # ------------------------------------------------------------ streaming
    @property
    def names(self) -> list[str]:
        return [f"txt_{b}_{i}" for b in BLOCKS for i in range(self.dims[b])]

    def start(self, ctx: RunContext) -> TextState:
        s = TextState()
        pb = self.blocks["prompt"]
        s.prompt = pb.project(*pb.indices(tokenize(ctx.prompt)))
        s.actions = CumulativeBlockState(self.blocks["actions"].dim)
        s.observations = CumulativeBlockState(self.blocks["observations"].dim)
        s.action_last = np.zeros(self.blocks["action_last"].dim)
        s.observation_last = np.zeros(self.blocks["observation_last"].dim)
        return s

    def update(self, s: TextState, step: Step) -> None:
        a, o = self._step_tokens(step)
        for name, toks in (("actions", a), ("observations", o)):
            b = self.blocks[name]
            getattr(s, name).add(b, *b.indices(toks))
        bl = self.blocks["action_last"]
        s.action_last = bl.project(*bl.indices(a))
        bo = self.blocks["observation_last"]
        s.observation_last = bo.project(*bo.indices(o))

    def values(self, s: TextState) -> np.ndarray:
        return np.concatenate([s.prompt, s.actions.value(), s.action_last, s.observations.value(), s.observation_last])

    # -------------------------------------------------------- serialization
    def get_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        meta = {"dims": self.dims, "min_df": self.min_df, "min_agents": self.min_agents, "max_features": self.max_features,
                "obs_chars": self.obs_chars, "seed": self.seed,
                "vocab": {b: sorted(self.blocks[b].vocab, key=self.blocks[b].vocab.get) for b in BLOCKS}}
        arrays = {}
        for b in BLOCKS:
            arrays[f"{b}.idf"] = self.blocks[b].idf
            arrays[f"{b}.components"] = self.blocks[b].components
        return meta, arrays

    @classmethod
    def from_state(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> "TextFamily":
        fam = cls(dims=meta["dims"], min_df=meta["min_df"], min_agents=meta["min_agents"], max_features=meta["max_features"],
                  obs_chars=meta["obs_chars"], seed=meta["seed"])
        for b in BLOCKS:
            vocab = {w: i for i, w in enumerate(meta["vocab"][b])}
            fam.blocks[b] = Block(vocab, arrays[f"{b}.idf"], arrays[f"{b}.components"])
        return fam
