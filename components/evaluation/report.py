"""The evaluation report: ``report.md``, a self-contained ``report.html``, PNG plots and ``per_query.jsonl``.

``write_report(out_dir, summary, per_query, plots)`` renders one ``summary`` dict. Every part is
optional; a section whose data is missing is left out (a BEIR run has no ``reading``, a SQuAD run without
qrels may have no ``retrieval``). The ``summary`` shape::

    {
      "dataset": "squad_v2-dev-200",                 # shown in the title
      "pipeline": "pipelines/squad.yaml",            # shown under the title
      "models": {component: served_by},              # optional, which model served each component
      "retrieval": {stage: {metric: value}},         # stage: bm25 / dense / fused / reranked / ...
                                                     # metrics: metrics.retrieval_summary() output
      "recall_curves": {stage: [r@1, ..., r@100]},   # metrics.recall_curve() output
      "reading": {                                   # metrics.squad_summary() output, plus
        "exact", "f1", "HasAns_exact", "HasAns_f1", "NoAns_exact", "NoAns_f1",
        "total", "HasAns_total", "NoAns_total", "abstentions",
        "abstention_precision", "abstention_recall",
        "answer_in_span_rate": float,                # answers whose span contains / lies in the gold span
        "mean_reader_tokens": float,                 # tokens the reader consumed per question
        "verdicts": {verdict: count},                # verifier verdict distribution
        ...                                          # any other scalar is shown under its own key
      },
      "taxonomy": {label: count},                    # taxonomy.taxonomy_totals() output
      "scores": {"answerable": [float], "unanswerable": [float], "threshold": float | None},
      "calibration": calibration.calibrate() output, optionally with "yaml": yaml_snippet(...) text,
    }

``per_query`` rows are written as they are to ``per_query.jsonl``; rows with a ``label`` other than
``correct`` are listed (up to ``max_examples``) under "Failure examples" with their ``qid``/``id``,
``question`` and ``reason`` when present. ``plots`` maps a title to an existing PNG that is shown under
"Other plots" (copied into ``out_dir`` when it lives elsewhere).

The HTML uses inline CSS only: no scripts, no external assets; images are referenced by relative path.
Plots are drawn by ``components.evaluation.report_plots`` (matplotlib's Agg canvas; ``pyplot`` is not touched).
"""

from __future__ import annotations

import dataclasses
import html
import json
import numbers
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from components.evaluation import report_selective
from components.evaluation.report_plots import make_plots, stages_in_order

RETRIEVAL_METRIC_ORDER = ("ndcg@10", "recall@1", "recall@5", "recall@10", "recall@100", "mrr@10", "queries")
READING_LABELS = {
    "exact": "EM (all)",
    "f1": "F1 (all)",
    "HasAns_exact": "EM answerable",
    "HasAns_f1": "F1 answerable",
    "NoAns_exact": "EM unanswerable",
    "NoAns_f1": "F1 unanswerable",
    "total": "questions",
    "HasAns_total": "answerable questions",
    "NoAns_total": "unanswerable questions",
    "abstentions": "abstentions",
    "abstention_precision": "abstention precision",
    "abstention_recall": "abstention recall",
    "answer_in_span_rate": "answer-in-span rate",
    "mean_reader_tokens": "mean reader tokens / question",
}
CALIBRATION_FACTS = ("objective", "seed", "fraction", "calibration_size", "held_out_size")
CALIBRATION_METRICS = ("n", "objective", "answer_recall", "abstention_precision", "abstention_recall")

# A section is (heading, blocks); a block is one of
#   ("text", str) | ("table", headers, rows) | ("image", alt, relative_path) | ("code", str)
Block = tuple
Section = tuple[str, list[Block]]


# ---------------------------------------------------------------------------------------------------
# formatting


def fmt(value: Any) -> str:
    """A table cell: floats with 3 decimals, ints as they are, None as an en dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return f"{float(value):.3f}"
    return str(value)


def _ordered_keys(dicts: Iterable[Mapping], preferred: Sequence[str]) -> list[str]:
    keys = list(dict.fromkeys(k for d in dicts for k in d))
    return [k for k in preferred if k in keys] + [k for k in keys if k not in preferred]


# ---------------------------------------------------------------------------------------------------
# sections


def _image(images: Mapping[str, Path], name: str, alt: str, out_dir: Path) -> list[Block]:
    if name not in images:
        return []
    return [("image", alt, images[name].relative_to(out_dir).as_posix())]


def _retrieval_section(summary: Mapping, images, out_dir) -> list[Section]:
    retrieval = summary.get("retrieval") or {}
    blocks: list[Block] = []
    if retrieval:
        stages = stages_in_order(retrieval)
        metrics = _ordered_keys((retrieval[s] for s in stages), RETRIEVAL_METRIC_ORDER)
        rows = [[stage, *(fmt(retrieval[stage].get(m)) for m in metrics)] for stage in stages]
        blocks.append(("table", ["stage", *metrics], rows))
    blocks += _image(images, "recall_curves", "recall@k per stage", out_dir)
    return [("Retrieval by stage", blocks)] if blocks else []


def _reading_section(summary: Mapping, images, out_dir) -> list[Section]:
    reading = dict(summary.get("reading") or {})
    verdicts = reading.pop("verdicts", None) or {}
    blocks: list[Block] = []
    keys = _ordered_keys([reading], list(READING_LABELS))
    rows = [[READING_LABELS.get(k, k), fmt(reading[k])] for k in keys if not isinstance(reading[k], Mapping)]
    if rows:
        blocks.append(("table", ["metric", "value"], rows))
    if verdicts:
        total = sum(verdicts.values())
        rows = [[v, fmt(n), fmt(n / total if total else None)] for v, n in verdicts.items()]
        blocks += [("text", "Verdict distribution:"), ("table", ["verdict", "count", "share"], rows)]
    blocks += _image(images, "score_distributions", "scores, answerable vs unanswerable", out_dir)
    return [("Reading", blocks)] if blocks else []


def _taxonomy_section(summary: Mapping, images, out_dir) -> list[Section]:
    totals = summary.get("taxonomy") or {}
    if not totals:
        return []
    total = sum(totals.values())
    rows = [[label, fmt(n), fmt(n / total if total else None)] for label, n in totals.items()]
    blocks = [("table", ["label", "questions", "share"], rows)]
    return [("Failure taxonomy", blocks + _image(images, "taxonomy", "failure taxonomy", out_dir))]


def _calibration_section(summary: Mapping) -> list[Section]:
    calibration = summary.get("calibration") or {}
    if not calibration:
        return []
    blocks: list[Block] = []
    facts = ", ".join(f"{k} = {fmt(calibration[k])}" for k in CALIBRATION_FACTS if k in calibration)
    if facts:
        blocks.append(("text", f"Chosen on the calibration split, measured on the held-out split: {facts}"))
    values = calibration.get("values") or {}
    rows = []
    for component, fields in values.items():
        for param, value in fields.items():
            chosen_on = calibration.get("calibration", {}).get(component, {}).get(param, {})
            held = calibration.get("held_out", {}).get(component, {}).get(param, {})
            rows.append(
                [
                    component,
                    param,
                    fmt(value),
                    fmt(chosen_on.get("objective")),
                    *(fmt(held.get(m)) for m in CALIBRATION_METRICS),
                ]
            )
    if rows:
        headers = [
            "component",
            "parameter",
            "value",
            "calibration objective",
            *(f"held-out {m}" for m in CALIBRATION_METRICS),
        ]
        blocks.append(("table", headers, rows))
    if calibration.get("yaml"):
        blocks.append(("code", calibration["yaml"]))
    return [("Calibration", blocks)] if blocks else []


def _examples_section(per_query: Sequence[Mapping], max_examples: int) -> list[Section]:
    failures = [row for row in per_query if row.get("label") not in (None, "correct")]
    if not failures:
        return []
    rows = [
        [fmt(row.get("qid", row.get("id"))), fmt(row.get("question")), row["label"], fmt(row.get("reason"))]
        for row in failures[:max_examples]
    ]
    note = f"Questions not answered correctly: {len(failures)} (the first {len(rows)} shown)."
    table = ("table", ["question id", "question", "label", "reason"], rows)
    return [("Failure examples", [("text", note), table])]


def _extra_plots_section(extra: Mapping[str, Path], out_dir: Path) -> list[Section]:
    blocks = [("image", title, path.relative_to(out_dir).as_posix()) for title, path in extra.items()]
    return [("Other plots", blocks)] if blocks else []


def build_sections(
    summary: Mapping,
    images: Mapping[str, Path],
    out_dir: Path,
    per_query: Sequence[Mapping] = (),
    extra_images: Mapping[str, Path] | None = None,
    max_examples: int = 20,
) -> list[Section]:
    """The report as a list of ``(heading, blocks)``, shared by the Markdown and HTML renderers."""
    return (
        _retrieval_section(summary, images, out_dir)
        + _reading_section(summary, images, out_dir)
        + _taxonomy_section(summary, images, out_dir)
        + report_selective.section(summary, lambda name, alt: _image(images, name, alt, out_dir), fmt)
        + _calibration_section(summary)
        + _examples_section(per_query, max_examples)
        + _extra_plots_section(extra_images or {}, out_dir)
    )


def _title(summary: Mapping) -> tuple[str, list[str]]:
    title = f"spanqa evaluation: {summary.get('dataset', 'unnamed dataset')}"
    lines = [f"pipeline: {summary['pipeline']}"] if summary.get("pipeline") else []
    lines += [f"{component}: {served}" for component, served in (summary.get("models") or {}).items()]
    return title, lines


# ---------------------------------------------------------------------------------------------------
# renderers


def _md_cell(value: str) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def render_markdown(summary: Mapping, sections: Sequence[Section]) -> str:
    """The report as Markdown."""
    title, lines = _title(summary)
    out = [f"# {title}", ""] + [f"- {_md_cell(line)}" for line in lines] + ([""] if lines else [])
    for heading, blocks in sections:
        out += [f"## {heading}", ""]
        for block in blocks:
            kind = block[0]
            if kind == "text":
                out += [block[1], ""]
            elif kind == "table":
                headers, rows = block[1], block[2]
                out.append("| " + " | ".join(_md_cell(h) for h in headers) + " |")
                out.append("|" + "|".join("---" for _ in headers) + "|")
                out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
                out.append("")
            elif kind == "image":
                out += [f"![{block[1]}]({block[2]})", ""]
            elif kind == "code":
                out += ["```yaml", block[1].rstrip("\n"), "```", ""]
    return "\n".join(out).rstrip("\n") + "\n"


_CSS = """
body { font-family: system-ui, sans-serif; max-width: 70em; margin: 2em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td { font-variant-numeric: tabular-nums; }
img { max-width: 100%; display: block; margin: 0.5em 0 1.5em; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; }
"""


def render_html(summary: Mapping, sections: Sequence[Section]) -> str:
    """The report as one HTML page with inline CSS, no scripts and no external assets."""
    esc = html.escape
    title, lines = _title(summary)
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<title>{esc(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        f"<h1>{esc(title)}</h1>",
    ]
    if lines:
        out.append("<ul>" + "".join(f"<li>{esc(line)}</li>" for line in lines) + "</ul>")
    for heading, blocks in sections:
        out.append(f"<h2>{esc(heading)}</h2>")
        for block in blocks:
            kind = block[0]
            if kind == "text":
                out.append(f"<p>{esc(block[1])}</p>")
            elif kind == "table":
                head = "".join(f"<th>{esc(str(h))}</th>" for h in block[1])
                cells = ("".join(f"<td>{esc(str(c))}</td>" for c in row) for row in block[2])
                body = "".join(f"<tr>{row}</tr>" for row in cells)
                out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
            elif kind == "image":
                out.append(f'<img src="{esc(block[2])}" alt="{esc(block[1])}">')
            elif kind == "code":
                out.append(f"<pre><code>{esc(block[1])}</code></pre>")
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------------
# files


def _json_default(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return value.item()
    if hasattr(value, "tolist") and callable(value.tolist):  # numpy arrays
        return value.tolist()
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


def write_per_query(path: str | Path, rows: Iterable[Mapping]) -> Path:
    """Write one JSON object per line (UTF-8, non-ASCII kept); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False, default=_json_default) + "\n")
    return path


def _place_extra_plots(out_dir: Path, plots: Mapping[str, str | Path]) -> dict[str, Path]:
    """Extra PNGs, copied into ``out_dir`` when they live elsewhere so that relative links work."""
    placed: dict[str, Path] = {}
    for title, source in plots.items():
        source = Path(source).resolve()
        if not source.is_file():
            raise FileNotFoundError(f"plot {title!r}: {source} does not exist")
        if out_dir.resolve() not in source.parents:
            target = out_dir / source.name
            shutil.copyfile(source, target)
            source = target.resolve()
        placed[title] = out_dir / source.relative_to(out_dir.resolve())
    return placed


def write_report(
    out_dir: str | Path,
    summary: Mapping,
    per_query: Sequence[Mapping] | None = None,
    plots: Mapping[str, str | Path] | None = None,
    max_examples: int = 20,
) -> dict[str, Path]:
    """Write ``report.md``, ``report.html``, the PNG plots and ``per_query.jsonl`` into ``out_dir``.

    Args:
        out_dir: created if missing.
        summary: see the module docstring for its shape; missing parts are left out of the report.
        per_query: rows for ``per_query.jsonl`` (not written when None).
        plots: ``{title: png path}`` of extra plots to include.

    Returns:
        ``{"markdown", "html", "per_query", <plot name>: path}`` for every file written; plot names are
        ``recall_curves``, ``score_distributions``, ``taxonomy`` and ``extra:<title>``.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    images = make_plots(out_dir, summary)
    extra = _place_extra_plots(out_dir, plots or {})
    sections = build_sections(summary, images, out_dir, per_query or (), extra, max_examples)
    written: dict[str, Path] = {"markdown": out_dir / "report.md", "html": out_dir / "report.html"}
    written["markdown"].write_text(render_markdown(summary, sections), encoding="utf-8")
    written["html"].write_text(render_html(summary, sections), encoding="utf-8")
    if per_query is not None:
        written["per_query"] = write_per_query(out_dir / "per_query.jsonl", per_query)
    written.update(images)
    written.update({f"extra:{title}": path for title, path in extra.items()})
    return written
