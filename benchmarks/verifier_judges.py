"""The trained verifier against the lexical rules, judge by judge, on the reader's own candidates over held-out
articles (``training/train_verifier.py`` writes them; never trained on): how many right answers each refuses and
how many wrong ones it passes, on the held-out SQuAD training articles, the held-out squad2-more articles
(adversarial unanswerable questions) and the held-out structured-text sources (tables and config files,
``train_verifier.py --structured-heldout``) apart. A benchmark, not a test.

    python benchmarks/verifier_judges.py                                   # the shipped verifier
    python benchmarks/verifier_judges.py --model .spanqa/training/verifier-out --json

Also printed: the share of candidates each P(right) threshold passes, so ``support_threshold`` is chosen on these
held-out articles (the development article is never read here).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "training"))

from benchmarks._common import ROOT  # noqa: E402

# the held-out candidates of the current reader, structured sources included (make train-verifier-structured), else
# those of the first run (make train-verifier)
CANDIDATES = next((p for p in (ROOT / ".spanqa" / "training" / d / "candidates-heldout.jsonl" for d in ("verifier2", "verifier"))
                   if p.exists()), ROOT / ".spanqa" / "training" / "verifier2" / "candidates-heldout.jsonl")


def lexical_verdicts(rows) -> list[tuple[str, str]]:
    """The lexical rules' ``(verdict, reason)`` on each candidate, with the pipeline's defaults."""
    from components.core.text.analysis import Analyzer
    from components.core.verification.checks import Piece, locate_extractive, visible_texts
    from components.core.verification.judgements import lexical_judgement
    from verifier_data import title_of

    analyzer = Analyzer()
    out = []
    for r in rows:
        vis = visible_texts([Piece("d", 0, r.read_text, title_of(r.article))])
        ev = locate_extractive(vis, r.answer, doc_id="d", start=r.char_start, end=r.char_end)
        j = lexical_judgement(r.question, ev, vis, analyzer, min_term_coverage=0.4)
        out.append((j.verdict, j.reason))
    return out


def tally(passed: list[bool], rows) -> dict:
    right = [r.label == 1 for r in rows]
    n_pass = sum(passed)
    ok = sum(p and y for p, y in zip(passed, right))
    return {"candidates": len(rows), "right": sum(right), "passed": n_pass,
            "precision": round(ok / n_pass, 3) if n_pass else None,
            "right_passed": round(ok / sum(right), 3) if sum(right) else None,
            "right_refused": sum(y and not p for p, y in zip(passed, right)),
            "wrong_passed": sum(p and not y for p, y in zip(passed, right))}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="spanqa/verifier-minilm-l6")
    p.add_argument("--candidates", default=str(CANDIDATES))
    p.add_argument("--threshold", type=float, default=0.5)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    import transformers

    from components.core.backends.models import load_hf_model, resolve_model
    from train_verifier import probabilities
    from verifier_data import read_jsonl

    path = Path(args.candidates)
    if not path.exists():
        raise SystemExit(f"verifier_judges: {path} is missing; `python training/train_verifier.py` writes it.")
    rows = [r for r in read_jsonl(path) if r.rank == 0]  # the candidate the pipeline judges first
    transformers.logging.set_verbosity_error()
    tokenizer, model = load_hf_model(resolve_model(args.model, component="verifier_judges").path,
                                     "AutoModelForSequenceClassification", "cpu")
    probs = probabilities(model, tokenizer, rows, 192)
    lexical = lexical_verdicts(rows)
    report = {}
    for name, keep in (("training articles", lambda r: not r.adversarial and r.context != "structured"),
                       ("squad2-more", lambda r: r.adversarial),
                       ("structured", lambda r: r.context == "structured" and "-realdocs-" not in r.article),
                       ("real documents", lambda r: "-realdocs-" in r.article),
                       ("definition lists", lambda r: r.article.endswith("-definitions")), ("all", lambda r: True)):
        idx = [i for i, r in enumerate(rows) if keep(r)]
        sub = [rows[i] for i in idx]
        if not sub:  # candidates written without structured blocks
            continue
        report[name] = {
            "lexical": tally([lexical[i][0] == "SUPPORTED" for i in idx], sub),
            "trained": tally([probs[i] >= args.threshold for i in idx], sub),
            # the trained verdict, vetoed where the question's key terms are missing from the whole read text
            "trained+missing": tally([probs[i] >= args.threshold and not lexical[i][1].startswith("key_terms_missing")
                                      for i in idx], sub),
            "thresholds": {t: tally([probs[i] >= t for i in idx], sub) for t in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7)},
        }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for name, r in report.items():
        print(f"{name}: {r['lexical']['candidates']} best candidates, {r['lexical']['right']} right")
        for judge in ("lexical", "trained", "trained+missing"):
            t = r[judge]
            print(f"  {judge:15s} passes {t['passed']:5d}  precision {t['precision']}  right passed "
                  f"{t['right_passed']}  right refused {t['right_refused']}  wrong passed {t['wrong_passed']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
