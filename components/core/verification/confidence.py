"""Confidence: the signals a pipeline already has, combined by a small fitted model into P(answer is right).

Signals (``SIGNALS``, all numbers, computed by ``answer_signals`` for every verified answer):

- ``reader_score`` — the reader's score of the answer (QA-model probability, or the sentence score offline);
- ``reader_margin`` — that score minus the best other answer's score;
- ``supported_margin`` — that score minus the best score of the other answers that say something else and that
  the verifier also supports (``answers.best_rival``): a runner-up the evidence rules out is no rival;
- ``no_answer`` — the reader's own no-answer score (its most confident window's);
- ``window_no_answer`` — the no-answer score of the window the answer was read from (``meta["null_score"]``;
  ``no_answer`` for a reader that gives none): SQuAD 2.0 weighs a span against its own window's null;
- ``rerank`` / ``rerank_margin`` — the re-rank score (a cross-encoder logit, or the bi-encoder cosine
  offline) of the window holding the answer, and its margin over the best other window;
- ``fused`` — the window's RRF score; ``window_rank`` — its rank among the windows read;
- ``term_coverage`` — share of the question's content terms in the evidence and its lead-in;
  ``sentence_coverage`` — the same in the evidence alone; ``missing_terms`` — share of them in no read text;
- ``answer_in_question`` — share of the answer's terms that the question already uses (an answer that only
  repeats the question says nothing);
- ``asks_type`` / ``typed`` — the question asks for a typed value (``short_answer.wanted``), and the answer is
  such a value (the sentence reader's short answer was found; the trained reader never sets it, so its weight in
  the shipped fit is 0; recomputing it from spaCy's entities was screened and not kept, training/HISTORY.md);
- ``level`` — widening level (0 window, 1 paragraph, 2 passage);
- ``agreement`` — share of the other windows read whose text also contains the answer;
- ``answer_words`` — log(1 + words of the answer); ``evidence_coverage`` — share of the answer's terms in its
  cited evidence (1.0 when verbatim; the generative reader's paraphrases score lower);
- ``verifier`` — the trained verifier's P(the answer is right) (``verification.verifier_input``; 0 when another
  backend judged).

The combiner (``Calibrator``) is scikit-learn's ``LogisticRegressionCV`` on standardised signals (its
regularisation chosen by cross-validated log loss within the fit half), fitted by
``run.py --eval … --calibrate`` on one half of a labelled set and saved as JSON (the file a pipeline YAML
names in ``verifier.calibration``); ``predict`` needs only numpy. A logistic model is monotone in every signal
(the direction is its coefficient's sign), so a stronger signal never lowers the confidence.

Usage::

    from components.core.verification.confidence import Calibrator

    cal = Calibrator.load("pipelines/calibration/extractive.offline.json")
    cal.predict({"reader_score": 0.8, "term_coverage": 1.0, ...})     # 0.93
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
from haystack.dataclasses import GeneratedAnswer

from components.core.errors import SpanQAError

SIGNALS = ("reader_score", "reader_margin", "supported_margin", "no_answer", "window_no_answer", "rerank",
           "rerank_margin", "fused", "window_rank", "term_coverage", "sentence_coverage", "missing_terms",
           "answer_in_question", "asks_type", "typed", "level", "agreement", "answer_words", "evidence_coverage",
           "verifier")
LEVELS = {"chunk": 0, "window": 0, "paragraph": 1, "passage": 2}
FORMAT = "spanqa-calibrator/1"
FILE_FORMAT = "spanqa-calibration/1"
REGULARISATION = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)  # inverse strengths LogisticRegressionCV chooses among
KINDS = ("extractive", "generative")  # one combiner per kind of answer: their reader scores mean different things


def _num(value: Any, default: float = 0.0) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return default
    return v if math.isfinite(v) else default


def answer_kind(answer) -> str:
    """``generative`` for a generated answer, else ``extractive`` (which combiner of the file applies)."""
    return "generative" if isinstance(answer, GeneratedAnswer) else "extractive"


def window_scores(doc) -> tuple[float, float]:
    """``(rerank, fused)`` of a window: the re-rank score (the bi-encoder's cosine when it kept the fused order)
    and the RRF score."""
    meta = getattr(doc, "meta", None) or {}
    scores = meta.get("scores") or {}
    rerank = meta.get("rerank_cosine", scores.get("rerank", getattr(doc, "score", None)))
    return _num(rerank), _num(scores.get("rrf"))


def answer_signals(*, answer_score: float, other_scores: Sequence[float], no_answer: float, window, windows: Sequence,
                   term_coverage: float, asks_type: bool, typed: bool, level: str, answer_text: str,
                   evidence_coverage: float, sentence_coverage: float = 0.0, missing_terms: float = 0.0,
                   answer_in_question: float = 0.0, rival_score: float | None = None,
                   window_no_answer: float | None = None, verifier: float | None = None) -> dict[str, float]:
    """The signals of one verified answer (see the module docstring); ``window`` is the read document holding it."""
    rerank, fused = window_scores(window)
    others = [window_scores(w)[0] for w in windows if w is not window]
    rank = 1 + sum(window_scores(w)[0] > rerank for w in windows if w is not window)
    needle = " ".join(answer_text.split()).casefold()
    agree = [needle in " ".join((w.content or "").split()).casefold() for w in windows if w is not window] if needle else []
    return {
        "reader_score": _num(answer_score),
        "reader_margin": _num(answer_score) - max((_num(s) for s in other_scores), default=0.0),
        "supported_margin": _num(answer_score) - _num(rival_score),
        "no_answer": _num(no_answer),
        "window_no_answer": _num(window_no_answer, _num(no_answer)),
        "rerank": rerank,
        "rerank_margin": rerank - max(others, default=rerank),
        "fused": fused,
        "window_rank": float(rank),
        "term_coverage": _num(term_coverage),
        "sentence_coverage": _num(sentence_coverage),
        "missing_terms": _num(missing_terms),
        "answer_in_question": _num(answer_in_question),
        "asks_type": float(bool(asks_type)),
        "typed": float(bool(typed)),
        "level": float(LEVELS.get(level, 0)),
        "agreement": sum(agree) / len(agree) if agree else 0.0,
        "answer_words": math.log1p(len(answer_text.split())),
        "evidence_coverage": _num(evidence_coverage, 1.0),
        "verifier": _num(verifier),
    }


def verified_signals(query: str, answer, score: float, other_scores: Sequence[float], no_answer: float,
                     documents: Sequence, evidence, level: str, analyzer,
                     rival_score: float | None = None, verifier: float | None = None) -> dict[str, float]:
    """``answer_signals`` of a verified answer from what the verifier holds: its ``Evidence``
    (``components.core.verification.checks``), the read documents and the analyzer that made the question's terms."""
    from components.core.reading.short_answer import wanted
    from components.core.text.key_terms import content_terms

    meta = getattr(answer, "meta", None) or {}
    span = evidence.evidence_span if evidence is not None else None
    window = next((d for d in documents if span is not None and (d.meta or {}).get("doc_id") == evidence.doc_id
                   and int((d.meta or {}).get("char_start", 0)) <= span[0]
                   and span[1] <= int((d.meta or {}).get("char_end", 0))), documents[0])
    wanted_terms = content_terms(query, analyzer)
    near = set(analyzer(f"{evidence.lead_in_text}\n{evidence.evidence_text}")) if evidence is not None else set()
    own = set(analyzer(evidence.evidence_text)) if evidence is not None else set()
    read = {t for d in documents for t in analyzer(d.content or "")}
    answer_terms = set(analyzer(str(answer.data or "")))

    def share(part: set) -> float:
        return len(wanted_terms & part) / len(wanted_terms) if wanted_terms else 1.0

    return answer_signals(
        answer_score=score, other_scores=other_scores, no_answer=no_answer, window=window, windows=documents,
        term_coverage=share(near), sentence_coverage=share(own), missing_terms=1.0 - share(read),
        answer_in_question=len(answer_terms & set(analyzer(query))) / len(answer_terms) if answer_terms else 0.0,
        asks_type=wanted(query) is not None, typed=bool(meta.get("short_answer")), level=level,
        answer_text=str(answer.data or ""), evidence_coverage=evidence.coverage if evidence is not None else 0.0,
        rival_score=rival_score, window_no_answer=meta.get("null_score"), verifier=verifier)


@dataclass
class Calibrator:
    """Logistic regression on standardised signals, with the threshold chosen for a target precision."""

    features: list[str]
    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float
    min_confidence: float | None = None
    target_precision: float | None = None
    fitted_on: dict = field(default_factory=dict)  # data set, half, size, served_by of the stack
    format: str = FORMAT
    low: list[float] | None = None  # each signal's range in the fit data: a signal beyond it is read at its edge
    high: list[float] | None = None

    def vector(self, signals: Mapping[str, float]) -> np.ndarray:
        """The signals in ``features`` order, each held inside the range the combiner was fitted on: a logistic
        model extrapolates linearly, so one signal far outside what it saw (a margin over no other answer in a
        three-document corpus: 13 standard deviations) would otherwise decide the confidence alone."""
        v = np.array([_num(signals.get(f)) for f in self.features], dtype=np.float64)
        if self.low is not None and self.high is not None:
            v = np.clip(v, self.low, self.high)
        return v

    def predict(self, signals: Mapping[str, float]) -> float:
        """P(right) for one answer's signals."""
        z = (self.vector(signals) - np.asarray(self.mean)) / np.asarray(self.scale)
        logit = float(z @ np.asarray(self.coef) + self.intercept)
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, logit))))

    @classmethod
    def from_dict(cls, data: dict) -> Calibrator:
        if data.get("format") != FORMAT:
            raise ValueError(f"format {data.get('format')!r}, expected {FORMAT!r}")
        cal = cls(**data)
        if not (len(cal.features) == len(cal.mean) == len(cal.scale) == len(cal.coef)):
            raise ValueError("features, mean, scale and coef differ in length")
        if (cal.low is None) != (cal.high is None) or (cal.low is not None and not (
                len(cal.low) == len(cal.high) == len(cal.features))):
            raise ValueError("low and high must both be given, one value per feature")
        return cal


def project_path(path: str) -> str:
    """A calibration file's path as given when it exists (or is absolute), else relative to the project root —
    so the YAMLs' ``calibration: pipelines/calibration.json`` works from any working directory."""
    p = Path(path)
    if p.is_absolute() or p.exists():
        return str(p)
    root = Path(__file__).resolve().parents[3] / p
    return str(root) if root.exists() else str(p)


@dataclass
class CalibrationFile:
    """The file a pipeline names: one ``Calibrator`` per kind of answer (``extractive``, ``generative``), so that
    extractive.yaml and generative.yaml name the same file and differ only in their reader."""

    calibrators: dict[str, Calibrator] = field(default_factory=dict)

    def get(self, kind: str) -> Calibrator | None:
        return self.calibrators.get(kind)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"format": FILE_FORMAT, **{k: asdict(c) for k, c in sorted(self.calibrators.items())}}
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)
        return path

    @classmethod
    def load(cls, path: str | Path, component: str = "verifier", missing_ok: bool = False) -> CalibrationFile:
        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or data.get("format") != FILE_FORMAT:
                raise ValueError(f"format {data.get('format') if isinstance(data, dict) else None!r}, expected {FILE_FORMAT!r}")
            return cls({k: Calibrator.from_dict(v) for k, v in data.items() if k in KINDS})
        except FileNotFoundError:
            if missing_ok:
                return cls()
            raise SpanQAError(f"Component '{component}': calibration file '{path}' does not exist. Fit one with "
                              f"`python run.py PIPELINE.yaml --eval SQUAD.json --calibrate`, or set calibration: null "
                              f"(answers then carry no confidence).") from None
        except (OSError, ValueError, TypeError) as exc:
            raise SpanQAError(f"Component '{component}': calibration file '{path}' is not a spanqa calibrator "
                              f"({exc}); fit it again with --calibrate.") from None


def prior_weights(unanswerable: Sequence[bool], n_questions: int, n_unanswerable: int,
                  unanswerable_share: float | None) -> np.ndarray:
    """Weights that make labelled answers count as if ``unanswerable_share`` of the questions asked had no answer
    in the sources (prior-shift correction): an answer to one of the ``n_unanswerable`` unanswerable questions
    (of ``n_questions``) weighs ``share / (1 - share) × answerable / unanswerable``, every other answer 1.
    ``None`` keeps the sample's own share (all weights 1)."""
    w = np.ones(len(unanswerable))
    if unanswerable_share is None:
        return w
    if not 0.0 < unanswerable_share < 1.0:
        raise ValueError(f"unanswerable_share must lie strictly between 0 and 1, got {unanswerable_share}")
    if n_unanswerable == 0 or n_unanswerable == n_questions:
        raise ValueError("re-weighting to an unanswerable share needs both answerable and unanswerable questions "
                         f"({n_unanswerable} of {n_questions} are unanswerable)")
    ratio = unanswerable_share / (1 - unanswerable_share) * (n_questions - n_unanswerable) / n_unanswerable
    w[np.asarray(unanswerable, dtype=bool)] = ratio
    return w


def fit(signals: Sequence[Mapping[str, float]], correct: Sequence[bool], target_precision: float | None = None,
        features: Sequence[str] = SIGNALS, fitted_on: dict | None = None,
        weights: Sequence[float] | None = None) -> Calibrator:
    """Fit the combiner on labelled answers (``correct[i]``: answer ``i`` was right) — one half only; ``weights``
    (``prior_weights``) re-weight answers in the fit and in the precision the bar is chosen for."""
    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.model_selection import StratifiedKFold

    if len(signals) < 10 or len(set(correct)) < 2:
        raise ValueError(f"need at least 10 answers with both right and wrong ones, got {len(signals)} "
                         f"({sum(map(bool, correct))} right)")
    x = np.array([[_num(s.get(f)) for f in features] for s in signals], dtype=np.float64)
    y = np.array([bool(c) for c in correct])
    w = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=np.float64)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    # the regularisation strength is chosen by 5-fold cross-validated log loss on this same (fit) half
    folds = StratifiedKFold(n_splits=min(5, int(y.sum()), int((~y).sum())), shuffle=True, random_state=0)
    model = LogisticRegressionCV(Cs=REGULARISATION, cv=folds, scoring="neg_log_loss", max_iter=2000)
    model.fit((x - mean) / scale, y, sample_weight=w)
    cal = Calibrator(list(features), mean.tolist(), scale.tolist(), model.coef_[0].tolist(),
                     float(model.intercept_[0]), None, target_precision,
                     dict(fitted_on or {}, size=len(y), right=int(y.sum()), C=float(model.C_[0])),
                     low=x.min(axis=0).tolist(), high=x.max(axis=0).tolist())
    if target_precision is not None:
        # the bar is chosen on out-of-fold confidences: each answer scored by a combiner that never saw it. On its own
        # fit data a combiner is surer than it will be on new questions, and a bar chosen there falls short of the
        # target precision on the report half (0.857 for 0.9, held-out articles, stage-3 reader)
        oof = out_of_fold((x - mean) / scale, y, w, folds, float(model.C_[0]))
        cal.min_confidence = threshold_for_precision(oof.tolist(), list(y), target_precision, w)
        cal.fitted_on["bar_chosen_on"] = "out-of-fold confidences"
    return cal


def out_of_fold(x: np.ndarray, y: np.ndarray, w: np.ndarray, folds, c: float) -> np.ndarray:
    """P(right) of each row from a logistic regression (inverse strength ``c``) fitted on the other folds."""
    from sklearn.linear_model import LogisticRegression

    out = np.empty(len(y))
    for train, test in folds.split(x, y):
        model = LogisticRegression(C=c, max_iter=2000).fit(x[train], y[train], sample_weight=w[train])
        out[test] = model.predict_proba(x[test])[:, 1]
    return out


def against_bar(confidence: float, bar: float, digits: int = 2) -> tuple[str, str]:
    """``confidence`` and ``bar`` written with ``digits`` decimals, or with as many more (up to 4) as it takes for a
    confidence under the bar not to read as equal to it: ``(0.776, 0.782)`` → ``("0.776", "0.782")``, not
    ``("0.78", "0.78")``; ``(0.63, 0.782)`` → ``("0.63", "0.78")``."""
    for d in range(digits, max(digits, 4) + 1):
        shown = f"{confidence:.{d}f}", f"{bar:.{d}f}"
        if shown[0] != shown[1]:
            break
    return shown


def threshold_for_precision(confidences: Sequence[float], correct: Sequence[bool], target: float,
                            weights: Sequence[float] | None = None) -> float:
    """The lowest confidence threshold whose answers (confidence ≥ it) reach ``target`` precision (weighted by
    ``weights`` when given) — the most coverage at that precision; 1.0 (answer nothing) when none reaches it."""
    order = sorted(range(len(confidences)), key=lambda i: -confidences[i])
    w = [1.0] * len(confidences) if weights is None else [float(x) for x in weights]
    best, right, total = 1.0, 0.0, 0.0
    for k, i in enumerate(order, start=1):
        right += w[i] * bool(correct[i])
        total += w[i]
        last = k == len(order) or confidences[order[k]] < confidences[i]
        if last and right / total >= target:
            best = confidences[i]
    return float(best)
