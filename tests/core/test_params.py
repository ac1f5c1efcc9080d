"""One validation style: the same mistake gives the same sentence from every component, as a ParameterError (a
SpanQAError and a ValueError), which the server answers with 422."""

from __future__ import annotations

import pytest

from components.core.errors import ParameterError, SpanQAError
from components.core.params import check_choice, check_positive_int
from components.serving.limits import classify_failure


def test_the_same_mistake_reads_the_same_in_every_component(tmp_path):
    from components.rankers.cross_encoder_ranker import CrossEncoderRanker
    from components.readers.extractive_reader import ExtractiveReader
    from components.retrievers.hybrid_retriever import HybridRetriever
    from components.stores.span_store import SpanStore

    messages = []
    for make in (lambda: ExtractiveReader(top_k=0), lambda: CrossEncoderRanker(top_k=0),
                 lambda: HybridRetriever(document_store=SpanStore(data_dir=str(tmp_path)), top_k=0)):
        with pytest.raises(ParameterError) as info:
            make()
        messages.append(str(info.value).split(": ", 1)[1])
        assert isinstance(info.value, SpanQAError) and isinstance(info.value, ValueError)
    assert len(set(messages)) == 1, messages
    assert messages[0] == ("parameter 'top_k' is 0, but it must be a whole number ≥ 1. Fix it in the pipeline YAML "
                           "(or on the command line).")


def test_a_parameter_error_is_the_requests_fault_when_served():
    with pytest.raises(ParameterError) as info:
        check_choice("ExtractiveReader", "fallback", "magic", ("trained", "sentence", None))
    assert classify_failure(info.value) == (422, str(info.value))
    try:
        check_positive_int("CrossEncoderRanker", "top_k", -1)
    except ParameterError as exc:
        wrapped = RuntimeError("pipeline failed")
        wrapped.__cause__ = exc
        assert classify_failure(wrapped)[0] == 422  # found in the chain, as Haystack wraps component errors
