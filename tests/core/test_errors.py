"""The error a user is shown is found inside Haystack's wrapping."""

from haystack.core.errors import PipelineRuntimeError

from components.core.errors import SpanQAError, causes, reported_error


def test_the_spanqa_error_inside_a_pipeline_error_is_the_one_reported():
    told = SpanQAError("PgSpanStore: the embedded PostgreSQL in /x failed while working (...)")
    try:
        try:
            raise told
        except SpanQAError as exc:
            raise PipelineRuntimeError("retriever", "HybridRetriever", "Component 'retriever' failed") from exc
    except PipelineRuntimeError as wrapped:
        assert reported_error(wrapped) is told
        assert [type(e).__name__ for e in causes(wrapped)] == ["PipelineRuntimeError", "SpanQAError"]
    assert reported_error(ValueError("a bug")) is None
