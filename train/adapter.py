"""A linear adapter on frozen MiniLM query vectors, trained in numpy (no torch).

The adapted query vector is ``normalise(q + q @ W)``; tool vectors are MiniLM's, unchanged,
so a catalog embedded by the shipped model needs no re-embedding, and the runtime cost is
one 384 x 384 product per query. ``W`` starts at zero (the adapter starts as MiniLM itself)
and is trained with a softmax contrastive loss: each request against every tool of the
catalog it comes from (its own catalog's tools are the negatives, a superset of in-batch
negatives), temperature ``tau``, the request's other gold tools masked out, plus
``weight_decay * |W|^2 / 2``, with Adam. Batches hold one catalog's requests; the batch
order is shuffled with a fixed seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Config:
    """The adapter's hyper-parameters (chosen by inner validation, never on a reported set)."""

    weight_decay: float = 1e-3
    tau: float = 0.05
    lr: float = 1e-3
    batch: int = 128
    epochs: int = 4
    documents: bool = False
    """Adapt tool vectors too (their own matrix): the catalog is then re-projected, not
    re-embedded."""

    def describe(self) -> str:
        sides = "query+tool" if self.documents else "query"
        return f"{sides} wd={self.weight_decay:g} tau={self.tau:g} lr={self.lr:g}"


@dataclass
class Group:
    """One training catalog: its requests' vectors, their gold rows, and its tools' vectors."""

    queries: np.ndarray
    positives: list[list[int]]
    documents: np.ndarray


def adapt(vectors: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """Adapted, unit-length vectors (``weights`` None: MiniLM's own)."""
    if weights is None:
        return vectors
    adapted = vectors + vectors @ weights
    unit: np.ndarray = adapted / np.linalg.norm(adapted, axis=1, keepdims=True)
    return unit


def _batches(
    groups: list[Group], batch: int, rng: np.random.Generator
) -> list[tuple[int, np.ndarray]]:
    """(group, rows of its (request, positive) pairs) per batch, in a shuffled order."""
    out: list[tuple[int, np.ndarray]] = []
    for g, group in enumerate(groups):
        pairs = np.array([(i, p) for i, pos in enumerate(group.positives) for p in pos])
        if len(pairs) == 0:
            continue
        pairs = pairs[rng.permutation(len(pairs))]
        out.extend((g, pairs[s : s + batch]) for s in range(0, len(pairs), batch))
    order = rng.permutation(len(out))
    return [out[i] for i in order]


def _unit(x: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    u = x + x @ weights
    norm = np.linalg.norm(u, axis=1, keepdims=True)
    return u / norm, norm


def _back(grad: np.ndarray, unit: np.ndarray, norm: np.ndarray) -> np.ndarray:
    """Gradient before ``normalise`` from the gradient after it."""
    before: np.ndarray = (grad - unit * np.sum(grad * unit, axis=1, keepdims=True)) / norm
    return before


def _gradient(
    weights: tuple[np.ndarray, np.ndarray | None], group: Group, pairs: np.ndarray, tau: float
) -> tuple[float, np.ndarray, np.ndarray | None]:
    """Mean loss of a batch of (request, positive) pairs, its gradients in both matrices."""
    q = group.queries[pairs[:, 0]]
    qn, norm = _unit(q, weights[0])
    if weights[1] is None:
        dn, dnorm = group.documents, None
    else:
        dn, dnorm = _unit(group.documents, weights[1])
    logits = qn @ dn.T / tau
    for row, (i, p) in enumerate(pairs):
        others = [x for x in group.positives[i] if x != p]
        if others:
            logits[row, others] = -np.inf
    logits -= logits.max(axis=1, keepdims=True)
    probs = np.exp(logits)
    probs /= probs.sum(axis=1, keepdims=True)
    loss = float(-np.log(probs[np.arange(len(pairs)), pairs[:, 1]] + 1e-12).mean())
    probs[np.arange(len(pairs)), pairs[:, 1]] -= 1.0
    probs /= tau * len(pairs)
    grad_q = q.T @ _back(probs @ dn, qn, norm)
    if dnorm is None:
        return loss, grad_q, None
    return loss, grad_q, group.documents.T @ _back(probs.T @ qn, dn, dnorm)


class _Adam:
    """Adam on one matrix."""

    def __init__(self, shape: tuple[int, int], lr: float) -> None:
        self.value: np.ndarray = np.zeros(shape, dtype=np.float32)
        self.m: np.ndarray = np.zeros(shape, dtype=np.float32)
        self.v: np.ndarray = np.zeros(shape, dtype=np.float32)
        self.lr = lr
        self.step = 0

    def update(self, grad: np.ndarray) -> None:
        self.step += 1
        self.m = 0.9 * self.m + 0.1 * grad
        self.v = 0.999 * self.v + 0.001 * grad * grad
        m_hat = self.m / (1 - 0.9**self.step)
        v_hat = self.v / (1 - 0.999**self.step)
        self.value = (self.value - self.lr * m_hat / (np.sqrt(v_hat) + 1e-8)).astype(np.float32)


Weights = tuple[np.ndarray, np.ndarray | None]
"""The query matrix and the tool matrix (None: tool vectors as MiniLM's)."""


def train(
    groups: list[Group], config: Config, seed: int, checkpoints: tuple[int, ...] = ()
) -> dict[int, Weights]:
    """The matrices after each epoch in ``checkpoints`` and after the last one, by epoch."""
    rng = np.random.default_rng(seed)
    dim = groups[0].documents.shape[1]
    query = _Adam((dim, dim), config.lr)
    tool = _Adam((dim, dim), config.lr) if config.documents else None
    out: dict[int, Weights] = {}
    for epoch in range(1, config.epochs + 1):
        for g, pairs in _batches(groups, config.batch, rng):
            current = (query.value, None if tool is None else tool.value)
            _loss, grad_q, grad_d = _gradient(current, groups[g], pairs, config.tau)
            query.update(grad_q + config.weight_decay * query.value)
            if tool is not None and grad_d is not None:
                tool.update(grad_d + config.weight_decay * tool.value)
        if epoch in checkpoints or epoch == config.epochs:
            out[epoch] = (query.value.copy(), None if tool is None else tool.value.copy())
    return out
