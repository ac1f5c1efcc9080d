"""training/average.py: the weighted mean of two readers' weights, exactly; inputs that differ in architecture
are refused with a message; the averaged reader's record names its inputs and keeps the learning curve's chain."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "training"))

import average  # noqa: E402


def _reader(path: Path, tensors: dict, record: dict | None, config: str = "bert") -> Path:
    path.mkdir(parents=True)
    save_file(tensors, str(path / "model.safetensors"))
    for name in average.COPIED:
        (path / name).write_text(f'{{"from": "{path.name}"}}')
    (path / "config.json").write_text(json.dumps({"model_type": config}))
    if record is not None:
        (path / "training.json").write_text(json.dumps(record))
    return path


def test_weighted_mean_is_exact_and_keeps_the_first_inputs_dtype():
    a = {"w": torch.tensor([1.0, 2.0], dtype=torch.float16), "b": torch.tensor([0.0])}
    b = {"w": torch.tensor([3.0, 6.0], dtype=torch.float16), "b": torch.tensor([4.0])}
    even = average.average_state_dicts([a, b], [1, 1])
    assert even["w"].tolist() == [2.0, 4.0] and even["w"].dtype == torch.float16
    assert even["b"].tolist() == [2.0]
    skewed = average.average_state_dicts([a, b], [1, 3])  # 1/4 of a, 3/4 of b
    assert skewed["w"].tolist() == [2.5, 5.0] and skewed["b"].tolist() == [3.0]


def test_other_architectures_are_refused_with_the_parameter_named():
    a = {"w": torch.zeros(2), "b": torch.zeros(1)}
    with pytest.raises(average.AverageError, match="other parameters than input 1"):
        average.average_state_dicts([a, {"w": torch.zeros(2)}], [1, 1])
    with pytest.raises(average.AverageError, match=r"parameter w is \(3,\) in input 2 and \(2,\) in input 1"):
        average.average_state_dicts([a, {"w": torch.zeros(3), "b": torch.zeros(1)}], [1, 1])
    with pytest.raises(average.AverageError, match="at least two"):
        average.average_state_dicts([a], [1])


def test_inputs_parse_as_dir_or_dir_and_weight():
    assert average.parse_input("runs/a") == (Path("runs/a"), 1.0)
    assert average.parse_input("runs/a:2.5") == (Path("runs/a"), 2.5)
    with pytest.raises(average.AverageError, match="positive weight"):
        average.parse_input("runs/a:0")


def test_average_writes_the_mean_and_a_record_that_names_its_inputs(tmp_path):
    old = _reader(tmp_path / "old", {"w": torch.tensor([0.0, 8.0], dtype=torch.float16)},
                  {"command": "train old", "examples_seen": 10, "curve": [{"examples": 10, "f1": 1.0}]})
    new = _reader(tmp_path / "new", {"w": torch.tensor([4.0, 0.0], dtype=torch.float16)},
                  {"command": "train new", "examples_seen": 20, "curve": [{"examples": 20, "f1": 2.0}],
                   "previous_stage": {"command": "train old"}})
    out = tmp_path / "out"
    assert average.main(["--out", str(out), str(old), f"{new}:3"]) == 0
    assert load_file(str(out / "model.safetensors"))["w"].tolist() == [3.0, 2.0]
    assert json.loads((out / "tokenizer.json").read_text()) == {"from": "old"}
    info = json.loads((out / "training.json").read_text())
    assert [(r["command"], r["weight"]) for r in info["average_of"]] == [("train old", 0.25), ("train new", 0.75)]
    assert all(len(r["sha256"]) == 64 for r in info["average_of"])
    assert info["previous_stage"]["command"] == "train new"  # the learning curve's chain goes on from the last input
    assert info["examples_seen"] == 0 and info["command"].startswith("python training/average.py --out")


def test_readers_with_other_configs_are_refused(tmp_path):
    a = _reader(tmp_path / "a", {"w": torch.zeros(2)}, None)
    b = _reader(tmp_path / "b", {"w": torch.zeros(2)}, None, config="roberta")
    with pytest.raises(average.AverageError, match="b/config.json differs from .*a/config.json"):
        average.average([(a, 1.0), (b, 1.0)], tmp_path / "out", "test")
    assert not (tmp_path / "out").exists()


def test_a_directory_without_weights_is_a_one_line_error(tmp_path, capsys):
    good = _reader(tmp_path / "good", {"w": torch.zeros(2)}, None)
    assert average.main(["--out", str(tmp_path / "out"), str(good), str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert "missing has no model.safetensors" in err and "Traceback" not in err
    assert "train_reader.py or train_verifier.py" in err  # readers and verifiers alike
    assert not (tmp_path / "out").exists()


def test_the_shipped_reader_is_the_soup_the_makefile_names():
    """The shipped reader is `make average-seeds`'s soup: the reader at SEEDS_BASE — taken from git, byte for byte
    the first input its training.json names — at weight 1/2, and the two seeds' runs (`make train-reader-negated`,
    `make train-reader-replicate`, outside git; their SHA-256 recorded) at 1/4 each; the shipped verifier is the mean
    of the two chain verifiers the same target names."""
    import hashlib
    import re
    import subprocess

    makefile = (ROOT / "Makefile").read_text()
    commit = re.search(r"^SEEDS_BASE \?= (\w+)$", makefile, re.M).group(1)
    shown = subprocess.run(["git", "show", f"{commit}:models/spanqa-reader-minilm-l6/model.safetensors"], cwd=ROOT,
                           capture_output=True)
    if shown.returncode != 0:
        pytest.skip(f"git history without {commit} (a shallow clone or an export)")
    info = json.loads((ROOT / "models" / "spanqa-reader-minilm-l6" / "training.json").read_text())
    base, *seeds = info["average_of"]
    assert base["sha256"] == hashlib.sha256(shown.stdout).hexdigest()
    assert [base["weight"]] + [s["weight"] for s in seeds] == [0.5, 0.25, 0.25]
    target = makefile[makefile.index("average-seeds: seeds-base"):]
    for seed in seeds:
        assert seed["path"] in target and f"--out {seed['path']} " in seed["command"] and len(seed["sha256"]) == 64
        assert seed["command"].startswith("python training/train_reader.py --init models/spanqa-reader-minilm-l6")
    verifier = json.loads((ROOT / "models" / "spanqa-verifier-minilm-l6" / "training.json").read_text())
    assert [v["weight"] for v in verifier["average_of"]] == [0.5, 0.5]
    for v in verifier["average_of"]:
        assert v["path"] in target and v["command"].startswith("python training/train_verifier.py")


def test_the_transformers_version_that_wrote_a_config_is_not_its_architecture():
    import average

    assert average.architecture({"hidden_size": 384, "transformers_version": "5.25.0"}) == {"hidden_size": 384}
