"""Shared bits of the benchmark scripts: repository on sys.path, offline, CISI location, timing."""

import json
import os
import random
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "false")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
CISI = Path(os.environ.get("SPANQA_CISI", ROOT.parent / "shared" / "data" / "cisi"))


def finish(report: dict, as_json: bool) -> int:
    """The end of a benchmark: the load average before → after (stored in ``report``), then ``report`` as JSON
    when asked. Returns the exit status 0."""
    report["load_average_after"] = os.getloadavg()
    print(f"load average {report['load_average_before'][0]:.2f} → {report['load_average_after'][0]:.2f}",
          file=sys.stderr if as_json else sys.stdout)  # --json: stdout is the JSON alone
    if as_json:
        print(json.dumps(report, indent=2))
    return 0


def best_of(fn, repeats: int = 3) -> float:
    """The fastest of ``repeats`` runs of ``fn()`` in seconds (least disturbed by other load)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def require_cisi() -> None:
    if not (CISI / "corpus.jsonl").exists():
        sys.exit(f"CISI not found at {CISI}; set SPANQA_CISI to a BEIR folder.")


def synthetic_corpus(folder: Path, n: int, seed: int = 0, head=None, suffix: str = ".txt") -> list[str]:
    """``n`` one-chunk documents recombined from CISI sentences (``head(i)``: text put before document ``i``, e.g.
    front matter in a ``.md``); some questions to ask them."""
    rng = random.Random(seed)
    sentences = []
    with open(CISI / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            text = json.loads(line)["text"]
            sentences += [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if 30 < len(s.strip()) < 240]
    folder.mkdir(parents=True)
    for i in range(n):
        sub = folder / f"{i // 1000:04d}"
        sub.mkdir(exist_ok=True)
        text = " ".join(rng.sample(sentences, 2))
        (sub / f"{i:07d}{suffix}").write_text((head(i) if head else "") + text, encoding="utf-8")
    with open(CISI / "queries.jsonl", encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in fh]


def random_embedder(dim: int = 384, seed: int = 0):
    import numpy as np

    rng = np.random.default_rng(seed)

    def embed(texts):
        m = rng.standard_normal((len(texts), dim)).astype(np.float32)
        return m / np.linalg.norm(m, axis=1, keepdims=True)
    return embed


class AnswerTally:
    """Answers counted by group and overall, as the end-to-end benchmarks report them: questions, answerable,
    shown, right, wrong, unanswerable ones answered, right answers held back (of them, by the confidence bar: the
    verifier SUPPORTED them; the rest the verifier or the reader's no-answer refused); then right share of the
    answerable, wrong share of the shown, precision and coverage."""

    FIELDS = ("questions", "answerable", "shown", "right", "wrong", "unanswerable_answered", "right_held_back",
              "right_held_by_bar")

    def __init__(self):
        from collections import defaultdict

        self.groups = defaultdict(lambda: dict.fromkeys(self.FIELDS, 0))

    def add(self, group: str, answerable: bool, shown: bool, right: bool, held_right: bool,
            by_bar: bool = False) -> None:
        """One question; ``by_bar``: its held-back right answer was SUPPORTED and fell under the confidence bar."""
        for key in (group, "all"):
            t = self.groups[key]
            t["questions"] += 1
            t["answerable"] += answerable
            t["shown"] += shown
            t["right"] += right
            t["wrong"] += shown and not right
            t["unanswerable_answered"] += shown and not answerable
            t["right_held_back"] += held_right
            t["right_held_by_bar"] += held_right and by_bar

    def report(self) -> dict:
        out = {}
        for key, t in self.groups.items():
            out[key] = {**t, "answerable_right_share": round(t["right"] / t["answerable"], 3) if t["answerable"] else None,
                        "wrong_share_of_answers": round(t["wrong"] / t["shown"], 3) if t["shown"] else None,
                        "precision": round(t["right"] / t["shown"], 3) if t["shown"] else None,
                        "coverage": round(t["shown"] / t["questions"], 3)}
        return out

    def print_table(self, label: str, order: list[str]) -> None:
        rows, width = self.report(), max(len(label), *(len(k) for k in order + ["all"]))
        print(f"{label:{width}s} {'questions':>9s} {'answerable':>10s} {'shown':>5s} {'right':>5s} {'wrong':>5s} "
              f"{'right share':>11s} {'precision':>9s} {'coverage':>8s} {'right held back':>15s} {'by the bar':>10s}")
        for key in [k for k in order if k in rows and k != "all"] + ["all"]:
            t = rows[key]
            print(f"{key:{width}s} {t['questions']:9d} {t['answerable']:10d} {t['shown']:5d} {t['right']:5d} "
                  f"{t['wrong']:5d} {str(t['answerable_right_share']):>11s} {str(t['precision']):>9s} "
                  f"{t['coverage']:8.3f} {t['right_held_back']:15d} {t['right_held_by_bar']:10d}")
