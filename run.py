"""spanqa command line: run a pipeline YAML on questions, or evaluate it on a dataset.

    python run.py pipelines/extractive.yaml --query "What is the refund window for annual plans?"
    python run.py pipelines/retrieval.yaml --eval ../shared/data/cisi --json
    python run.py cluster up --shards 2 --replicas 1      # a PostgreSQL cluster for pipelines/extractive-cluster.yaml
"""

from __future__ import annotations

import argparse
import json
import os
import sys

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "false")  # off unless the user opted in
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Span-faithful question answering with Haystack pipelines in YAML.")
    p.add_argument("pipeline", help="pipeline YAML, e.g. pipelines/extractive.yaml")
    p.add_argument("--query", "-q", action="append", help="a question (repeatable); none: read stdin / prompt")
    p.add_argument("--data", help="corpus: folder of .txt/.md, BEIR folder or SQuAD .json (replaces data_dir)")
    p.add_argument("--cache-dir", help="index cache directory (replaces cache_dir)")
    p.add_argument("--top-k", type=int, help="how many passages the final ranking keeps")
    p.add_argument("--as", dest="as_user", metavar="USER",
                   help="ask as USER (with --groups): only documents those groups may read are searched and cited")
    p.add_argument("--groups", metavar="G1,G2", help="the asker's groups, comma-separated (with --as; '' for none)")
    p.add_argument("--filters", help="Haystack metadata filter as JSON, e.g. '{\"field\":\"meta.status\",\"operator\":\"==\",\"value\":\"current\"}'")
    p.add_argument("--json", action="store_true", help="machine-readable output (one JSON object per query, or the eval summary)")
    p.add_argument("--eval", metavar="DATASET", help="evaluate on a BEIR folder or a SQuAD .json")
    p.add_argument("--report", metavar="DIR", help="with --eval: write report.md, report.html, plots, per_query.jsonl")
    p.add_argument("--calibrate", action="store_true", help="with --eval on SQuAD: choose thresholds on one half, report on the other")
    p.add_argument("--limit", type=int, help="with --eval: only the first N questions")
    p.add_argument("--target-precision", type=float,
                   help="with --calibrate: the precision the confidence bar (min_confidence) is chosen for (default: "
                        "the calibration file's, else 0.9)")
    p.add_argument("--unanswerable-share", type=float, metavar="S",
                   help="with --calibrate: fit the combiner and choose its bar as if this share of the questions had "
                        "no answer in the sources (prior-shift re-weighting; default: the YAML's "
                        "metadata.spanqa.unanswerable_share, else the labelled set's own share)")
    p.add_argument("--resplits", type=int, default=20, metavar="N",
                   help="with --calibrate: also refit on N other choose/report splits and report the spread of the "
                        "report half's precision and coverage (default 20; 0: skip)")
    p.add_argument("--calibration-out", metavar="FILE",
                   help="with --calibrate: where to save the fitted confidence combiner (default: the file the "
                        "verifier's `calibration` names)")
    p.add_argument("--no-audit", action="store_true", help="do not append answers to the audit log")
    p.add_argument("--index", action="store_true", help="build or sync the pipeline's index, say what was done, exit")
    p.add_argument("--ray", metavar="ADDRESS", help="with --index on PostgreSQL: convert, split and embed with Ray Data "
                   "(auto: the running Ray cluster; HOST:PORT: that one; local: this machine alone); needs "
                   "pip install -e '.[cluster]'")
    p.add_argument("--min-confidence", type=float, metavar="P",
                   help="the confidence bar for this run (replaces verifier.min_confidence; 0 answers whatever the "
                        "verifier supports)")
    p.add_argument("--validate", action="store_true",
                   help="only check the pipeline YAML and resolve its models (nothing is indexed or answered)")
    serving = p.add_argument_group("serving (Hayhooks: REST, OpenAI-compatible chat, MCP, answer page)")
    serving.add_argument("--serve", action="store_true",
                         help="serve the pipeline over HTTP under its file stem (README, \"Serving (Hayhooks)\")")
    serving.add_argument("--host", help="with --serve: address to listen on (default 127.0.0.1)")
    serving.add_argument("--port", type=int, help="with --serve: port to listen on (default 1416)")
    serving.add_argument("--keys", metavar="FILE", help="with --serve: API keys (JSON: key -> {principal, groups}); "
                         "required beyond loopback (default: SPANQA_KEYS_FILE). With --validate: list documents "
                         "that name a group no key holds")
    return p.parse_args(argv)


def questions(args) -> list[str]:
    if args.query:
        return args.query
    if sys.stdin.isatty():
        try:
            return [input("Question: ").strip()]
        except EOFError:
            return []
    return [line.strip() for line in sys.stdin if line.strip()]


def _ray_index(args, store, err) -> int:
    """``--index --ray``: the store's folder indexed with Ray Data (components.stores.pgvector.ray_ingest)."""
    from components.core.errors import SpanQAError
    from components.stores.pgvector.ray_ingest import ray_index

    if not args.index:
        raise SpanQAError("--ray goes with --index (python run.py PIPELINE --index --ray auto).")
    if not hasattr(store, "server_dsn") and not hasattr(store, "primaries"):
        raise SpanQAError(f"--ray writes to PostgreSQL: {type(store).__name__} is the in-memory store. Use "
                          f"pipelines/extractive-postgres.yaml or pipelines/extractive-cluster.yaml.")
    done = ray_index(store, args.ray)
    if args.json:
        print(json.dumps(done))
    else:
        err.print(f"indexed with Ray on {done['nodes']} node(s): {done['files']} files, {done['written']} written "
                  f"({done['chunks_written']} chunks), {done['unchanged']} unchanged, {done['deleted']} deleted, "
                  f"{len(done['skipped'])} skipped; {done['seconds']:.1f}s")
        for rel, why in done["skipped"]:
            err.print(f"[yellow]skipped[/yellow] {rel}: {why}", highlight=False)
    return 0


def _quiet_libraries() -> None:
    """One progress display at a time: spanqa's own (indexing, evaluation); no weight-loading bars."""
    try:
        import transformers

        transformers.utils.logging.disable_progress_bar()
        transformers.utils.logging.set_verbosity_error()
    except ImportError:  # pragma: no cover - transformers is a dependency
        pass


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from rich.console import Console

    from rich.markup import escape

    from components.core.errors import reported_error

    err = Console(stderr=True)
    if argv[:1] == ["cluster"]:  # python run.py cluster up|down|status: the servers of PgClusterStore
        from components.app.cluster_cli import main as cluster_main

        try:
            return cluster_main(argv[1:], Console())
        except Exception as exc:  # noqa: BLE001 - one paragraph, as for pipelines
            told = reported_error(exc)
            if told is None:
                raise
            err.print(f"[bold red]error:[/bold red] {escape(str(told))}", highlight=False)
            return 2
    args = parse_args(argv)
    try:
        _check_cli_values(args)
        return _main(args, err)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a SpanQAError, also inside Haystack's PipelineRuntimeError: one paragraph
        told = reported_error(exc)
        if told is None:
            raise
        err.print(f"[bold red]error:[/bold red] {escape(str(told))}", highlight=False)
        return 2


def _check_cli_values(args) -> None:
    from components.core.retrieval.filters import parse_filters
    from components.core.params import check_positive_int

    check_positive_int("run.py", "--top-k", args.top_k, optional=True)
    check_positive_int("run.py", "--limit", args.limit, optional=True)
    from components.core.params import check_fraction

    check_fraction("run.py", "--target-precision", args.target_precision, optional=True)
    check_fraction("run.py", "--min-confidence", args.min_confidence, optional=True)
    check_fraction("run.py", "--unanswerable-share", args.unanswerable_share, high_open=True, optional=True)
    if args.resplits < 0:
        from components.core.errors import SpanQAError

        raise SpanQAError(f"run.py: --resplits is {args.resplits}, but it counts the extra choose/report splits the "
                          "confidence fit is repeated on: give 0 (none) or more.")
    if args.unanswerable_share == 0:
        from components.core.errors import SpanQAError

        raise SpanQAError("run.py: --unanswerable-share is 0, but it must lie strictly between 0 and 1 (a share "
                          "of 0 weighs the unanswerable questions out of the fit); leave it out to fit on the "
                          "labelled set's own share.")
    args.filters = parse_filters(args.filters) if args.filters else None
    if args.keys and not (args.serve or args.validate):
        from components.core.errors import SpanQAError

        raise SpanQAError("--keys names the API keys of a server: it goes with --serve (run.py PIPELINE --serve "
                          "--keys FILE), or with --validate to list documents no key can read.")


def _check_calibration_stack(runner, err) -> None:
    """Confidence is calibrated for the models it was fitted with: say so when others serve now."""
    if not runner.verifier or not runner.readers:
        return
    from rich.markup import escape

    from components.app.runner import reader_kind

    calibrator = runner.pipeline.get_component(runner.verifier).calibrator(reader_kind(runner))
    fitted = (calibrator.fitted_on or {}).get("served_by") if calibrator is not None else None
    if fitted and fitted != runner.models():
        changed = sorted(k for k in set(fitted) | set(runner.models()) if fitted.get(k) != runner.models().get(k))
        err.print(f"[yellow]confidence[/yellow] was calibrated with other models ({escape(', '.join(changed))} differ): "
                  f"it is not a calibrated probability for this stack; run --eval … --calibrate on labelled data.")


def unanswerable_share(args, spec: dict) -> float | None:
    """The unanswerable share --calibrate fits for: the flag, else the pipeline YAML's
    ``metadata.spanqa.unanswerable_share`` (validated with the YAML: strictly between 0 and 1, or null) — where users
    are: how many of their questions the sources do not answer."""
    if args.unanswerable_share is not None:
        return args.unanswerable_share
    return ((spec.get("metadata") or {}).get("spanqa") or {}).get("unanswerable_share")


def _validate(args, out) -> int:
    from components.app.pipeline_io import load_pipeline
    from components.app.validate import resolve_models

    pipeline, _ = load_pipeline(args.pipeline, data=args.data, cache_dir=args.cache_dir)
    served = resolve_models(pipeline)
    keys_file = getattr(args, "keys", None) or os.environ.get("SPANQA_KEYS_FILE")
    access = _access_report(pipeline, keys_file) if keys_file else None
    if args.json:
        print(json.dumps({"pipeline": args.pipeline, "valid": True, "models": served,
                          **({"access": access} if access is not None else {})}))
    else:
        out.print(f"{args.pipeline}: valid", highlight=False)
        for name, what in served.items():
            out.print(f"  {name}: {what}", markup=False, highlight=False)
        if access is not None:
            out.print(f"  access: {access['restricted']} of {access['documents']} documents restricted; groups of the "
                      f"keys: {', '.join(access['key_groups']) or '(none)'}", markup=False, highlight=False)
            for doc_id, groups in access["unknown_groups"].items():
                out.print(f"  access: {doc_id} names group(s) no key has: {', '.join(groups)} — nobody can read it "
                          f"through the server", markup=False, highlight=False)
            for doc_id, why in access["unreadable"].items():
                out.print(f"  access: {doc_id}: {why}", markup=False, highlight=False)
            if access["groups_no_key_holds"]:
                out.print(f"  access: group(s) named by documents that no key holds: "
                          f"{', '.join(access['groups_no_key_holds'])}", markup=False, highlight=False)
            for name, why in access["skipped"]:
                out.print(f"  skipped: {name}: {why} (not indexed: nobody reads it)", markup=False, highlight=False)
    return 0


def _access_report(pipeline, keys_file: str) -> dict:
    """With --keys: which documents are restricted, and which name a group no key holds (a typo locks them away)."""
    from components.retrievers.hybrid_retriever import HybridRetriever
    from components.serving.auth import load_keys

    key_groups = sorted({g for p in load_keys(keys_file).values() for g in p.groups})
    retriever = next(c for _, c in pipeline.walk() if isinstance(c, HybridRetriever))
    rule = retriever.access_rule
    report = retriever.document_store.load_documents()
    documents = report.documents
    unknown, unreadable, named, restricted = {}, {}, set(), 0
    for doc in documents:
        allowed = rule.allowed(doc.meta)
        if allowed is None:
            continue
        restricted += 1
        named |= allowed
        why = rule.unreadable_reason(doc.meta)
        if why:
            unreadable[doc.doc_id] = why
            continue
        missing = sorted(allowed - set(key_groups))
        if missing and not (allowed & set(key_groups)):
            unknown[doc.doc_id] = missing
    return {"documents": len(documents), "restricted": restricted, "key_groups": key_groups,
            "unknown_groups": unknown, "unreadable": unreadable, "groups_no_key_holds": sorted(named - set(key_groups)),
            "skipped": [list(s) for s in report.skipped]}


def _main(args, err) -> int:
    from rich.console import Console

    from components.evaluation import evaluate

    from components.app import render
    from components.app.pipeline_io import load_pipeline
    from components.app.runner import QueryRunner, public
    from components.core.errors import SpanQAError
    from components.core.logs import quiet_logger

    from rich.markup import escape

    out = Console()
    if args.validate:
        return _validate(args, out)
    if args.serve:
        from components.serving.app import serve

        return serve(args)
    data = args.data
    kind = None
    if args.eval:
        kind = evaluate.dataset_kind(args.eval)
        data = args.eval
    pipeline, spec = load_pipeline(args.pipeline, data=data, cache_dir=args.cache_dir)
    audit = None if args.no_audit or args.eval else ((spec.get("metadata") or {}).get("spanqa") or {}).get("audit_log")
    ttl = None if args.eval else ((spec.get("metadata") or {}).get("spanqa") or {}).get("answer_cache_ttl_s")
    runner = QueryRunner(pipeline, audit_log=audit, answer_cache_ttl_s=ttl)
    if args.ray:
        return _ray_index(args, runner.store(), err)
    if args.min_confidence is not None and runner.verifier:
        pipeline.get_component(runner.verifier).min_confidence = args.min_confidence
    if args.calibrate and runner.verifier:  # fitting a new combiner: a missing file is what is being made
        from pathlib import Path

        from components.core.verification.confidence import project_path

        verifier = pipeline.get_component(runner.verifier)
        if verifier.calibration and not Path(project_path(verifier.calibration)).exists():
            args.calibration_out = args.calibration_out or verifier.calibration
            verifier.calibration = None
            err.print(f"[dim]calibration file {escape(args.calibration_out)} does not exist yet: --calibrate fits it[/dim]")
    _quiet_libraries()
    with quiet_logger("components"):  # each fallback is announced once, below (the components also log it)
        runner.warm_up()
    store = runner.store()
    stats = store.stats
    if stats.get("store"):  # PostgreSQL: what the incremental sync did
        err.print(f"[dim]index: {escape(stats['store'])}, tables {escape(stats['tables'])}: {stats['documents']} "
                  f"documents, {stats['chunks']} chunks (added {stats['added']}, changed {stats['changed']}, "
                  f"deleted {stats['deleted']}, unchanged {stats['unchanged']}; {stats['seconds']:.1f}s)[/dim]")
    else:
        err.print(f"[dim]index: {stats['documents']} documents, {stats['chunks']} chunks "
                  f"({'built' if stats['built'] else 'loaded from cache'} in {stats['seconds']:.1f}s)[/dim]")
    if stats.get("skipped"):
        err.print(f"[yellow]skipped {len(stats['skipped'])} of {stats.get('found', '?')} file(s):[/yellow] "
                  + escape("; ".join(f"{p} ({r})" for p, r in stats["skipped"])), highlight=False)
    if stats.get("hidden"):
        err.print(f"[yellow]left out {sum(stats['hidden'].values()):,} character(s) no reader sees (hidden, white on "
                  f"white, tiny or off the page) in {len(stats['hidden'])} file(s):[/yellow] "
                  + escape("; ".join(f"{p} ({n})" for p, n in stats["hidden"].items())), highlight=False)
    for name, served in runner.models().items():
        if served.startswith("fallback:"):
            err.print(f"[yellow]offline fallback[/yellow] {name}: {served}")
    _check_calibration_stack(runner, err)
    if args.index:  # the index is built or synced (above): nothing to ask
        if args.json:
            print(json.dumps({k: v for k, v in stats.items() if k != "shards"}, default=str))
        return 0
    if args.eval:
        return _evaluate(args, kind, runner, out, err, spec)
    filters = args.filters
    groups = None  # a local user reads everything, unless asking as someone
    if args.as_user is not None or args.groups is not None:
        groups = [g.strip() for g in (args.groups or "").split(",") if g.strip()]
    qs = questions(args)
    if not qs:
        raise SpanQAError("No question given: pass --query \"...\", pipe questions on stdin (one per line), or run in a terminal to be prompted.")
    for q in qs:
        result = runner.ask(q, filters=filters, top_k=args.top_k, groups=groups, principal=args.as_user)
        if args.json:
            print(json.dumps(public(result), ensure_ascii=False))
        elif runner.readers:
            render.print_answer(out, result, lambda doc_id: store.source(doc_id)[0])
        else:
            render.print_retrieval(out, result)
    return 0


def _evaluate(args, kind, runner, out, err, spec: dict) -> int:
    from pathlib import Path

    from components.evaluation import evaluate

    from components.app import render
    from components.core.errors import SpanQAError

    progress = not args.json or sys.stderr.isatty()
    if args.calibrate and (kind == "beir" or not runner.readers):
        raise SpanQAError("--calibrate chooses abstention thresholds from answerable and unanswerable questions: "
                          "use it with a SQuAD 2.0 .json file and a reading pipeline (pipelines/extractive.yaml).")
    if kind == "beir":
        summary, rows = evaluate.evaluate_beir(runner, Path(args.eval), progress=progress, limit=args.limit)
    elif not runner.readers:
        summary, rows = evaluate.evaluate_squad_retrieval(runner, Path(args.eval), progress=progress, limit=args.limit)
    else:
        summary, rows = evaluate.evaluate_squad(runner, Path(args.eval), progress=progress, limit=args.limit)
        if args.calibrate:
            from components.evaluation.confidence_eval import calibrate_confidence

            summary["calibration"] = evaluate.calibrate(rows, runner)
            summary["confidence_calibration"] = calibrate_confidence(rows, runner, args.eval, args.target_precision,
                                                                     args.calibration_out,
                                                                     unanswerable_share(args, spec),
                                                                     args.resplits)
    summary.update(dataset=args.eval, pipeline=args.pipeline, models=runner.models())
    if args.report:
        from components.evaluation.report import write_report

        paths = write_report(args.report, summary, [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows])
        err.print(f"[dim]report: {', '.join(str(p) for p in paths.values())}[/dim]")
    if args.json:
        print(json.dumps(summary, ensure_ascii=False, default=str))
    else:
        render.print_summary(out, summary)
        if summary.get("calibration", {}).get("yaml"):  # verbatim: rich must not wrap or mark up YAML
            out.print(summary["calibration"]["yaml"], markup=False, highlight=False, soft_wrap=True)
    for warning in summary.get("calibration", {}).get("warnings", []) + summary.get(
            "confidence_calibration", {}).get("warnings", []):
        err.print(f"[yellow]calibration:[/yellow] {warning}", highlight=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
