"""Human-readable output (rich): ranked passages, or the answer with its span highlighted in context."""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from components.core.verification.confidence import against_bar

CONTEXT_CHARS = 160
# C0 controls but tab and newline, DEL and C1 controls: ANSI escape sequences start with one of them
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def plain(text: Any) -> str:
    """Document or question text made safe for a terminal: control characters (ANSI escapes) shown as
    ``\\x1b``-style escapes instead of being sent to the terminal. Use it for ``Text`` objects."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def safe(text: Any) -> str:
    """``plain`` and escaped for rich markup: ``[/note]`` or ``[link=…]`` in a document is shown, not obeyed."""
    return escape(plain(text))


def _snippet(text: str, n: int = 220) -> str:
    text = " ".join(plain(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def print_retrieval(console: Console, result: dict[str, Any]) -> None:
    table = Table(title=f"[bold]{safe(result['query'])}[/bold]", show_lines=False, expand=True)
    for col, style in (("#", "dim"), ("doc_id", "cyan"), ("chars", "dim"), ("score", ""), ("text", "")):
        table.add_column(col, style=style, overflow="fold")
    for i, d in enumerate(result["documents"][:10], start=1):
        table.add_row(str(i), Text(plain(d["doc_id"])), f"{d['char_start']}–{d['char_end']}", f"{d['score']:.4f}",
                      Text(_snippet(d["text"])))
    console.print(table)


def print_answer(console: Console, result: dict[str, Any], source) -> None:
    """``source(doc_id)`` returns the ``SourceDocument``, whose text shows the span in context."""
    console.print(f"[bold]Q:[/bold] {safe(result['query'])}")
    conf = result.get("confidence")
    # a NOT_FOUND's confidence is its held-back reading's, said with it on the next line
    shown = conf is not None and result.get("answer") is not None
    verdict = safe(f"{result.get('verdict')}: {result.get('reason')}" + (f"; confidence {conf:.2f}" if shown else ""))
    if result.get("answer") is None:
        console.print(f"[bold yellow]A: not found in the source[/bold yellow]  ({verdict})")
        held = result.get("held_back")
        if held:
            where = f" in {safe(held['doc_id'])}" if held.get("doc_id") else ""
            said, bar_said = against_bar(held["confidence"], held["min_confidence"])
            console.print(f"   [dim]held back: found '{safe(held['answer'])}'{where}, confidence "
                          f"{said} — below the {bar_said} bar[/dim]")
    else:
        console.print(f"[bold green]A:[/bold green] {safe(result['answer'])}  [dim]({verdict})[/dim]")
        span = (result.get("spans") or [None])[0]
        if span:
            doc = source(span["doc_id"])
            text, body_start = doc.text, doc.body_start
            s, e = span["char_start"], span["char_end"]
            ctx = Text("…" + " ".join(plain(text[max(body_start, s - CONTEXT_CHARS) : s]).split()) + " ")
            ctx.append(plain(text[s:e]), style="bold black on yellow")
            ctx.append(" " + " ".join(plain(text[e : e + CONTEXT_CHARS]).split()) + "…")
            console.print(ctx)
            cite = (span.get("location") or {}).get("cite")
            where = f"{safe(cite)} · " if cite and cite != span["doc_id"] else f"{safe(span['doc_id'])} "
            console.print(f"[dim]source: {where}chars {s}–{e}[/dim]")
            for other in result["spans"][1:]:  # evidence beyond the context shown (a code key's naming sentence)
                shown = other["doc_id"] == span["doc_id"] and other["char_start"] < e + CONTEXT_CHARS and (
                    other["char_end"] > s - CONTEXT_CHARS)
                if not shown:
                    console.print(f"[dim]see also:[/dim] {escape(_snippet(other['text']))} "
                                  f"[dim]({safe(other['doc_id'])} chars {other['char_start']}–{other['char_end']})[/dim]")
    for conflict in result.get("conflicts") or []:  # another current source says something else: both are shown
        first = (conflict.get("spans") or [{}])[0]
        where = (first.get("location") or {}).get("cite") or first.get("doc_id")
        console.print(f"[bold yellow]but:[/bold yellow] {safe(conflict['answer'])}  [dim]({safe(where)} · chars "
                      f"{first.get('char_start')}–{first.get('char_end')}): the sources disagree[/dim]")
    console.print(f"[dim]route: {safe(' → '.join(result.get('route') or []))}[/dim]")
    if result.get("citations"):
        console.print(f"[dim]citations: {result['citations']}[/dim]")
    console.print()


def print_summary(console: Console, summary: dict[str, Any]) -> None:
    for stage, m in (summary.get("retrieval") or {}).items():
        console.print(f"[bold]{stage:9}[/bold] " + "  ".join(
            f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in m.items()))
    reading = summary.get("reading") or {}
    if reading:
        keys = ("exact", "f1", "HasAns_f1", "NoAns_exact", "answer_in_span_rate", "not_found_rate_unanswerable",
                "abstention_precision", "abstention_recall", "mean_reader_tokens", "mean_full_document_tokens",
                "reader_token_ratio")
        console.print("[bold]reading[/bold]   " + "  ".join(
            f"{k} {reading[k]:.3f}" for k in keys if isinstance(reading.get(k), (int, float))))
        console.print(f"[bold]verdicts[/bold]  {reading.get('verdicts')}")
    if summary.get("taxonomy"):
        console.print(f"[bold]taxonomy[/bold]  {summary['taxonomy']}")
    for name, block in (("selective", summary.get("selective") or {}),
                        ("calibrated", {f"refit, {k}": v for k, v in (summary.get("confidence_calibration") or {}).items()
                                        if k in ("choose_half", "report_half")})):
        for part, m in block.items():
            if "aurc" not in m:
                continue
            console.print(f"[bold]{name:9}[/bold] {part}: " + "  ".join(
                f"{k} {m[k]:.3f}" for k in ("precision_supported", "coverage_supported", "precision_answered",
                                              "coverage_answered", "coverage_at_precision_0.9",
                                              "coverage_at_precision_0.8", "aurc", "ece")
                if isinstance(m.get(k), (int, float)))
                + (f"  (a calibrated predictor: ECE {m['ece_if_calibrated']:.3f}, "
                   f"≥ this in {m['ece_consistency']:.0%} of draws)" if m.get("ece_if_calibrated") is not None else ""))
    cc = summary.get("confidence_calibration")
    if cc and cc.get("saved_to"):
        console.print(f"[bold]confidence[/bold] fitted on the choose half, saved to {escape(str(cc['saved_to']))}; "
                      f"min_confidence {cc['min_confidence']:.3f} for target precision {cc['target_precision']}")
        spread = cc.get("resplits")
        if spread and spread.get("precision_answered"):
            pa, ca, c9 = (spread.get(k) or {} for k in ("precision_answered", "coverage_answered",
                                                        "coverage_at_precision_0.9"))
            fitted = "" if pa.get("n") == spread["splits"] else f" ({pa.get('n')} could be fitted)"
            console.print(f"[bold]calibrated[/bold] refit on {spread['splits']} other splits{fitted}, report half at each "
                          f"split's bar: precision_answered mean {pa['mean']:.3f} ({pa['min']:.3f}–{pa['max']:.3f}; "
                          f"≥ {spread['target_precision']} in {spread['at_target']:.0%} of splits)  coverage_answered "
                          f"mean {ca['mean']:.3f} ({ca['min']:.3f}–{ca['max']:.3f})"
                          + (f"  coverage_at_precision_0.9 mean {c9['mean']:.3f}" if c9 else ""))
        share = cc.get("report_half_at_share")
        if share and share.get("precision_answered") is not None:
            console.print(f"[bold]calibrated[/bold] refit, report half counted at unanswerable share "
                          f"{share['unanswerable_share']}: precision_answered {share['precision_answered']:.3f}  "
                          f"coverage_answered {share['coverage_answered']:.3f}")
