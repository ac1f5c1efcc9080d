"""Average the weights of readers, or of verifiers, fine-tuned from one start (a "model soup", Wortsman et al.
2022): the mean of two stages of the same run, or of two runs from two seeds, often reads better than either, at no
training cost. The inputs must share the architecture (same parameter names and shapes); the mean is taken in fp32
and saved in the first input's dtype (fp16 for spanqa's shipped reader), with its tokenizer and config, and a
``training.json`` that names each input (path, weight, SHA-256 of its weights, its own training command) and keeps
the last input's record as ``previous_stage`` — so ``benchmarks/reader_squad.py`` still prints the learning curve
that led here.

    python training/average.py --out .spanqa/training/average-out OLD_STAGE_DIR NEW_STAGE_DIR
    python training/average.py --out DIR A_DIR:1 B_DIR:2        # weights 1/3 and 2/3
    make average-seeds                                           # two seeds' readers and verifiers (run 19)

Which average ships is chosen like any stage: on held-out data, by criteria written before (training/README.md).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the project's components, run from anywhere

WEIGHTS = "model.safetensors"
COPIED = ("config.json", "tokenizer.json", "tokenizer_config.json")
RECORD_KEYS = ("transformers_version",)  # which library wrote a config.json: a record, not the architecture


def architecture(config: dict) -> dict:
    """A ``config.json`` without the keys that only record how it was written."""
    return {k: v for k, v in config.items() if k not in RECORD_KEYS}


class AverageError(ValueError):
    """Inputs that cannot be averaged; the message says which and what to do."""


def parse_input(text: str) -> tuple[Path, float]:
    """``DIR`` or ``DIR:WEIGHT`` (weight 1 when left out; a weight must be positive)."""
    path, _, weight = text.rpartition(":")
    try:
        value = float(weight)
    except ValueError:
        path, value = text, 1.0
    if not path or value <= 0:
        raise AverageError(f"training/average.py: '{text}' is not DIR or DIR:WEIGHT with a positive weight.")
    return Path(path), value


def average_state_dicts(dicts: list[dict], weights: list[float]) -> dict:
    """The weighted mean of ``dicts`` (tensors by name), weights normalised to sum to 1, computed in fp32 and
    returned in the first dict's dtypes. Raises ``AverageError`` when names or shapes differ."""
    if len(dicts) < 2:
        raise AverageError("training/average.py: give at least two models to average.")
    names = set(dicts[0])
    for i, d in enumerate(dicts[1:], 2):
        if set(d) != names:
            missing = sorted(names ^ set(d))[:3]
            raise AverageError(f"training/average.py: input {i} has other parameters than input 1 (e.g. {missing}): "
                               "only models of the same architecture (one lineage of training) can be averaged.")
        for name in names:
            if d[name].shape != dicts[0][name].shape:
                raise AverageError(f"training/average.py: parameter {name} is {tuple(d[name].shape)} in input {i} "
                                   f"and {tuple(dicts[0][name].shape)} in input 1: not the same architecture.")
    total = sum(weights)
    out = {}
    for name in dicts[0]:
        acc = sum(d[name].float() * (w / total) for d, w in zip(dicts, weights))
        out[name] = acc.to(dicts[0][name].dtype).contiguous()
    return out


def average(inputs: list[tuple[Path, float]], out: Path, command: str) -> dict:
    """Write the weighted mean of the readers in ``inputs`` to ``out``; returns its ``training.json`` record."""
    from safetensors.torch import load_file, save_file

    from components.core.retrieval.index_files import file_sha256

    for path, _ in inputs:
        if not (path / WEIGHTS).exists():
            raise AverageError(f"training/average.py: {path} has no {WEIGHTS}; give model directories "
                               "(an --out of training/train_reader.py or train_verifier.py, or one under models/).")
    configs = [architecture(json.loads((path / "config.json").read_text(encoding="utf-8")))
               if (path / "config.json").exists() else None for path, _ in inputs]
    for (path, _), config in zip(inputs[1:], configs[1:]):
        if config != configs[0]:
            raise AverageError(f"training/average.py: {path}/config.json differs from {inputs[0][0]}/config.json: "
                               "only models of one architecture and vocabulary can be averaged.")
    dicts = [load_file(str(path / WEIGHTS)) for path, _ in inputs]
    mean = average_state_dicts(dicts, [w for _, w in inputs])
    out.mkdir(parents=True, exist_ok=True)
    save_file(mean, str(out / WEIGHTS), metadata={"format": "pt"})
    for name in COPIED:
        shutil.copy(inputs[0][0] / name, out / name)
    total = sum(w for _, w in inputs)
    records = []
    for path, weight in inputs:
        card = path / "training.json"
        info = json.loads(card.read_text(encoding="utf-8")) if card.exists() else {}
        records.append({"path": str(path), "weight": round(weight / total, 6), "sha256": file_sha256(path / WEIGHTS),
                        "command": info.get("command"), "examples_seen": info.get("examples_seen")})
    last = inputs[-1][0] / "training.json"
    info = {"command": command, "average_of": records, "examples_seen": 0, "minutes": 0.0, "curve": [],
            "previous_stage": json.loads(last.read_text(encoding="utf-8")) if last.exists() else None}
    (out / "training.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return info


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("inputs", nargs="+", help="reader or verifier directories, DIR or DIR:WEIGHT (the last one's "
                                             "record is kept as previous_stage)")
    p.add_argument("--out", required=True, help="directory to write the averaged model to")
    args = p.parse_args(argv)
    try:
        inputs = [parse_input(text) for text in args.inputs]
        info = average(inputs, Path(args.out), "python training/average.py " + " ".join(argv or sys.argv[1:]))
    except AverageError as e:
        print(e, file=sys.stderr)
        return 2
    names = ", ".join(f"{r['path']} × {r['weight']:.3f}" for r in info["average_of"])
    print(f"wrote {args.out}: the mean of {names}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
