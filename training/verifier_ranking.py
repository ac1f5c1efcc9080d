"""The verifier as a ranker of one question's candidates: batches of whole questions, a pairwise loss, and the
held-out measure of it.

Why: the reader's lower answers are where many right answers sit (a right one is among its five best for 212 of
257 answerable real-document questions, first for 164), but a verifier trained one candidate at a time tells a lower
right answer from a lower wrong one too poorly to pick it (training/HISTORY.md: "Judging more of the reader's answers
than its best"). ``--pairwise W`` in ``train_verifier.py`` adds to the per-candidate loss ``W`` × the mean over a
batch's (right, wrong) pairs *of the same question* of ``softplus(logit_wrong − logit_right)`` (RankNet), so the
model learns the order within a question as well as the probability.

    from verifier_ranking import question_batches, within_question
    batches = question_batches(qids, 32, random.Random(0))   # index lists, whole questions each
    within_question(probs, labels, qids, reader_scores)       # {"questions", "verifier_first", "reader_first"}
"""

from __future__ import annotations

import random
from collections.abc import Sequence


def groups(qids: Sequence[str]) -> dict[str, list[int]]:
    """The indices of each question's candidates, questions in first-seen order."""
    out: dict[str, list[int]] = {}
    for i, q in enumerate(qids):
        out.setdefault(q, []).append(i)
    return out


def question_batches(qids: Sequence[str], batch_size: int, rng: random.Random) -> list[list[int]]:
    """Shuffled batches of whole questions: questions are added until a batch holds ``batch_size`` candidates or
    more (a question with more candidates than that is a batch of its own). Every index is in exactly one batch."""
    if batch_size < 1:
        raise ValueError(f"question_batches: batch_size must be 1 or more, not {batch_size}")
    order = list(groups(qids).values())
    rng.shuffle(order)
    batches, current = [], []
    for g in order:
        current.extend(g)
        if len(current) >= batch_size:
            batches.append(current)
            current = []
    if current:
        batches.append(current)
    return batches


def pairs(qids: Sequence[str], labels: Sequence[int]) -> list[tuple[int, int]]:
    """``(right, wrong)`` index pairs of candidates of the same question."""
    out = []
    for idx in groups(qids).values():
        right = [i for i in idx if labels[i]]
        wrong = [i for i in idx if not labels[i]]
        out.extend((r, w) for r in right for w in wrong)
    return out


def pair_loss(logits, qids: Sequence[str], labels: Sequence[int]):
    """Mean ``softplus(logit_wrong − logit_right)`` over ``pairs``; a zero tensor (with grad) when there are none."""
    import torch

    p = pairs(qids, labels)
    if not p:
        return logits.sum() * 0.0
    right = torch.tensor([r for r, _ in p], device=logits.device)
    wrong = torch.tensor([w for _, w in p], device=logits.device)
    return torch.nn.functional.softplus(logits[wrong] - logits[right]).mean()


def within_question(probs: Sequence[float], labels: Sequence[int], qids: Sequence[str],
                    reader_scores: Sequence[float]) -> dict:
    """Over the questions with a right and a wrong candidate: how often the verifier's most probable candidate is
    right (``verifier_first``), and the reader's best-scored one (``reader_first``, the order it replaces). Ties go
    to the earlier candidate."""
    n = by_verifier = by_reader = 0
    for idx in groups(qids).values():
        if not any(labels[i] for i in idx) or all(labels[i] for i in idx):
            continue
        n += 1
        by_verifier += bool(labels[max(idx, key=lambda i: (probs[i], -i))])
        by_reader += bool(labels[max(idx, key=lambda i: (reader_scores[i], -i))])
    return {"questions": n, "verifier_first": round(by_verifier / n, 4) if n else None,
            "reader_first": round(by_reader / n, 4) if n else None}
