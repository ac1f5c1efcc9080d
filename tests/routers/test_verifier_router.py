"""VerifierRouter: verdicts, routes, outputs, backends (lexical / nli stand-in / fake llm) and a real Haystack loop."""

import copy
import logging
import sys
import types

import pytest
from haystack import Document, Pipeline, component
from haystack.components.joiners import BranchJoiner
from haystack.core.errors import PipelineMaxComponentRuns
from haystack.dataclasses import ExtractedAnswer, GeneratedAnswer

from components.core.errors import ParameterError, SpanQAError
from components.core.backends.models import ModelUnavailableError
from components.core.text.splitting import split_blocks
from components.routers import VerifierRouter

MISSING = "spanqa-test/no-such-nli-model"

# Offsets: heading [0,16) | paragraph 1 [18,127): [18,49) [50,77) [78,127) | paragraph 2 [129,210):
# [129,157) [158,210) | paragraph 3 [212,277): [212,255) [256,277). "30 days" [107,114), "14 days" [202,209)
SOURCE = (
    "Acme Pro Billing\n\n"
    "Acme Pro is billed every month. Invoices are sent by email. Refunds are available within 30 days of purchase.\n\n"
    "Acme Basic is billed yearly. Refunds for Acme Basic are available within 14 days.\n\n"
    "Error ERR-4012 means the card was declined. Retry after 24 hours."
)
QUERY = "How long are refunds available for Acme Pro?"
ROUTE = ["retrieve", "rerank", "expand"]



def doc(start, end, level="window", doc_id="billing", route=ROUTE, **meta):
    return Document(
        content=SOURCE[start:end],
        meta={"doc_id": doc_id, "char_start": start, "char_end": end, "level": level, "route": list(route), **meta},
    )


def ans(text, start, end, score=0.8, doc_id="billing"):
    meta = {"doc_id": doc_id, "char_start": start, "char_end": end}
    return ExtractedAnswer(query=QUERY, score=score, data=text, meta=meta)


def abstain(score=0.9):
    return ExtractedAnswer(query=QUERY, score=score, data=None, meta={"no_answer": True})


def verifier(**kw):
    v = VerifierRouter(**kw)
    v.warm_up()
    return v


def test_source_offsets():
    assert SOURCE[107:114] == "30 days" and SOURCE[202:209] == "14 days"
    assert SOURCE[18:49] == "Acme Pro is billed every month."
    assert [(b.start, b.end) for b in split_blocks(SOURCE)] == [(0, 16), (18, 127), (129, 210), (212, 277)]


# ------------------------------------------------------------------------------------------ routes


def test_supported_at_window_returns_answer_with_spans_and_route():
    out = verifier().run(query=QUERY, answers=[ans("30 days", 107, 114)], documents=[doc(18, 127)])
    assert list(out) == ["answers"]
    (a,) = out["answers"]
    assert (a.data, a.score) == ("30 days", 0.8)
    assert a.meta["verdict"] == "SUPPORTED"
    assert a.meta["reason"] == "supported: answer in the evidence with 'Acme Pro'"
    assert a.meta["route"] == [*ROUTE, "read", "verify:SUPPORTED"]
    assert a.meta["spans"] == [
        {"doc_id": "billing", "char_start": 107, "char_end": 114, "text": "30 days"},
        {"doc_id": "billing", "char_start": 18, "char_end": 49, "text": "Acme Pro is billed every month."},
        {"doc_id": "billing", "char_start": 78, "char_end": 127,
         "text": "Refunds are available within 30 days of purchase."},
    ]
    assert (a.meta["doc_id"], a.meta["char_start"], a.meta["char_end"]) == ("billing", 107, 114)


def test_partial_at_window_widens_to_paragraph():
    docs = [doc(50, 127), doc(0, 16, doc_id="faq")]  # "Acme Pro" only in the other document
    out = verifier().run(query=QUERY, answers=[ans("30 days", 107, 114)], documents=docs)
    assert list(out) == ["widen"]
    route = [*ROUTE, "read", "verify:PARTIAL", "widen:paragraph"]
    assert [(d.meta["doc_id"], d.meta["widen_to"], d.meta["route"]) for d in out["widen"]] == [
        ("billing", "paragraph", route),
        ("faq", "paragraph", route),
    ]
    assert [d.content for d in out["widen"]] == [SOURCE[50:127], SOURCE[0:16]]
    assert [d.id for d in out["widen"]] == [d.id for d in docs]


def test_unsupported_at_window_widens_to_passage():
    out = verifier().run(query=QUERY, answers=[ans("14 days", 202, 209)], documents=[doc(129, 210)])
    assert list(out) == ["widen"]
    (d,) = out["widen"]
    assert d.meta["widen_to"] == "passage"
    assert d.meta["route"] == [*ROUTE, "read", "verify:UNSUPPORTED", "widen:passage"]


def test_paragraph_level_partial_widens_to_passage():
    route = [*ROUTE, "read", "verify:PARTIAL", "widen:paragraph"]
    docs = [doc(18, 127, "paragraph", route=route), doc(129, 210, "paragraph", route=route)]
    q = "How long are refunds available for Acme Basic customers on Pro?"
    # evidence: sentence [158,210) + lead-in [129,157) (Acme Basic); 'Pro' only in paragraph 1 -> PARTIAL
    out = verifier().run(query=q, answers=[ans("14 days", 202, 209)], documents=docs)
    assert list(out) == ["widen"]
    assert [d.meta["widen_to"] for d in out["widen"]] == ["passage", "passage"]
    assert out["widen"][0].meta["route"] == [*route, "read", "verify:PARTIAL", "widen:passage"]


def test_passage_level_unsupported_is_not_found():
    route = [*ROUTE, "read", "verify:UNSUPPORTED", "widen:passage"]
    docs = [doc(0, 277, "passage", route=route)]
    out = verifier().run(query=QUERY, answers=[ans("45 days", 0, 7, score=0.3)], documents=docs)
    assert list(out) == ["not_found"]
    (nf,) = out["not_found"]
    assert (nf.data, nf.query, nf.score) == (None, QUERY, 0.3)
    assert nf.meta == {
        "no_answer": True,
        "verdict": "NOT_FOUND",
        "reason": "answer_not_in_documents",
        "route": [*route, "read", "verify:UNSUPPORTED"],
        "last_verdict": "UNSUPPORTED",
        "candidate": "45 days",
        "served_by": "lexical",
    }


def test_passage_level_partial_is_not_found_with_last_verdict():
    out = verifier().run(query=QUERY, answers=[ans("14 days", 202, 209)], documents=[doc(0, 277, "passage")])
    (nf,) = out["not_found"]
    assert nf.meta["last_verdict"] == "PARTIAL"
    assert nf.meta["reason"] == "key_terms_elsewhere: 'Acme Pro' only elsewhere in the read documents"
    assert nf.meta["route"] == [*ROUTE, "read", "verify:PARTIAL"]


def test_reader_abstained_is_unsupported():
    v = verifier()
    out = v.run(query=QUERY, answers=[abstain()], documents=[doc(78, 127)])
    assert out["widen"][0].meta["route"] == [*ROUTE, "read", "verify:UNSUPPORTED", "widen:passage"]
    out = v.run(query=QUERY, answers=[abstain(0.4)], documents=[doc(0, 277, "passage")])
    (nf,) = out["not_found"]
    assert (nf.score, nf.meta["reason"], nf.meta["last_verdict"]) == (0.0, "reader_abstained", "UNSUPPORTED")
    assert nf.meta["candidate"] is None
    out = v.run(query=QUERY, answers=[], documents=[doc(0, 277, "passage")])
    assert out["not_found"][0].meta["reason"] == "reader_abstained"


def test_no_documents_is_not_found():
    out = verifier().run(query=QUERY, answers=[], documents=[])
    (nf,) = out["not_found"]
    assert nf.meta["reason"] == "no_candidates"
    assert nf.meta["route"] == ["read", "verify:UNSUPPORTED"]
    assert nf.score == 0.0 and nf.data is None and nf.meta["no_answer"] is True


def test_best_non_abstaining_answer_is_verified():
    answers = [ans("14 days", 202, 209, score=0.5), abstain(0.6), ans("30 days", 107, 114, score=0.7)]
    out = verifier().run(query=QUERY, answers=answers, documents=[doc(18, 210)])
    assert out["answers"][0].data == "30 days"


def test_reader_no_answer_that_outscores_every_span_is_an_abstention():
    answers = [ans("14 days", 202, 209, score=0.5), abstain(0.99), ans("30 days", 107, 114, score=0.7)]
    out = verifier().run(query=QUERY, answers=answers, documents=[doc(18, 210)])
    assert out["widen"][0].meta["route"][-2:] == ["verify:UNSUPPORTED", "widen:passage"]
    out = verifier(respect_reader_abstention=False).run(query=QUERY, answers=answers, documents=[doc(18, 210)])
    assert out["answers"][0].data == "30 days"


def test_a_keyed_value_is_judged_although_the_reader_prefers_no_answer():
    """A row the question names by its key: whether it answers is the verifier's call, not the reader's null."""
    keyed = ans("30 days", 107, 114, score=0.7)
    keyed.meta["keyed_lookup"] = True
    out = verifier().run(query=QUERY, answers=[abstain(0.99), keyed], documents=[doc(18, 210)])
    assert out["answers"][0].data == "30 days"
    free = ans("30 days", 107, 114, score=0.7)  # the same span the model chose itself: the null wins
    out = verifier().run(query=QUERY, answers=[abstain(0.99), free], documents=[doc(18, 210)])
    assert out["widen"][0].meta["route"][-2:] == ["verify:UNSUPPORTED", "widen:passage"]


def test_the_value_of_another_setting_is_refused_when_the_named_one_is_absent():
    conf = "## Bridge\n\n# The keepalive interval, in seconds.\n#keepalive_interval 60\nmax_packet_size 0\n"
    start = conf.index("60")
    window = Document(content=conf, meta={"doc_id": "conf", "char_start": 0, "char_end": len(conf),
                                          "level": "passage", "route": list(ROUTE)})

    def asked(question):
        answer = ExtractedAnswer(query=question, score=0.9, data="60",
                                 meta={"doc_id": "conf", "char_start": start, "char_end": start + 2})
        return verifier().run(query=question, answers=[answer], documents=[window])

    out = asked("What is the default max_keepalive?")  # named, but no line of the text holds it
    assert out["not_found"][0].meta["reason"] == ("another_setting: the question names `max_keepalive`, which the "
                                                  "read text does not hold; the answer is the value of "
                                                  "`keepalive_interval`")
    assert "answers" in asked("What is the default keepalive_interval?")  # the setting asked about
    assert "answers" in asked("What is the default keepalive interval in seconds?")  # its words, in order


def test_max_level_paragraph_caps_widening():
    v = verifier(max_level="paragraph")
    out = v.run(query=QUERY, answers=[ans("14 days", 202, 209)], documents=[doc(129, 210)])
    assert out["widen"][0].meta["widen_to"] == "paragraph"
    assert out["widen"][0].meta["route"][-1] == "widen:paragraph"
    out = v.run(query=QUERY, answers=[ans("14 days", 202, 209)], documents=[doc(129, 210, "paragraph")])
    assert out["not_found"][0].meta["last_verdict"] == "UNSUPPORTED"


def test_widener_that_does_not_change_level_cannot_loop():
    route = [*ROUTE, "read", "verify:PARTIAL", "widen:paragraph"]
    docs = [doc(50, 127, route=route), doc(0, 16, doc_id="faq", route=route)]  # still "window"
    out = verifier().run(query=QUERY, answers=[ans("30 days", 107, 114)], documents=docs)
    (nf,) = out["not_found"]
    assert nf.meta["reason"].endswith("(already widened to paragraph)")
    assert nf.meta["route"] == [*route, "read", "verify:PARTIAL"]


def test_unknown_level_is_a_clear_error():
    with pytest.raises(SpanQAError, match="level 'page' is unknown"):
        verifier().run(query=QUERY, answers=[ans("30 days", 107, 114)], documents=[doc(18, 127, "page")])


def test_inputs_are_not_mutated():
    docs = [doc(50, 127), doc(0, 16, doc_id="faq")]
    answers = [ans("30 days", 107, 114)]
    docs_before, answers_before = copy.deepcopy(docs), copy.deepcopy(answers)
    v = verifier()
    v.run(query=QUERY, answers=answers, documents=docs)  # widen
    v.run(query=QUERY, answers=answers, documents=[doc(18, 127)])  # answers
    assert docs == docs_before
    assert [a.to_dict() for a in answers] == [a.to_dict() for a in answers_before]
    assert docs[0].meta["route"] == ROUTE and "widen_to" not in docs[0].meta


def test_offsets_from_document_and_document_offset():
    window = doc(78, 127)
    a = ExtractedAnswer(
        query=QUERY, score=0.6, data="30 days", document=window,
        document_offset=ExtractedAnswer.Span(29, 36),
    )
    out = verifier().run(query=QUERY, answers=[a], documents=[doc(18, 127)])
    span = out["answers"][0].meta["spans"][0]
    assert span == {"doc_id": "billing", "char_start": 107, "char_end": 114, "text": "30 days"}


# --------------------------------------------------------------------------------- generated answers


def test_generated_answer_verbatim_in_cited_evidence():
    g = GeneratedAnswer(
        data="within 30 days", query=QUERY, documents=[],
        meta={"evidence": [{"doc_id": "billing", "char_start": 18, "char_end": 127}], "score": 0.5},
    )
    out = verifier().run(query=QUERY, answers=[g], documents=[doc(18, 127)])
    (a,) = out["answers"]
    assert isinstance(a, GeneratedAnswer)
    assert a.meta["spans"][0] == {"doc_id": "billing", "char_start": 100, "char_end": 114, "text": "within 30 days"}


def test_generated_answer_not_in_cited_passage_is_unsupported():
    # "14 days" is read, but the answer cites paragraph 1 only
    g = GeneratedAnswer(
        data="14 days", query=QUERY, documents=[doc(18, 127)], meta={},
    )
    out = verifier().run(query=QUERY, answers=[g], documents=[doc(18, 210)])
    assert out["widen"][0].meta["route"][-2:] == ["verify:UNSUPPORTED", "widen:passage"]


# -------------------------------------------------------------------------------------- NLI backend


def build_nli_standin(path, id2label, bias):
    """A tiny BERT sequence classifier whose output ignores the input: softmax(bias) over ``id2label``."""
    import torch
    from transformers import AutoModelForSequenceClassification

    from tests.standins import minilm_tokenizer, tiny_qa_config

    tok = minilm_tokenizer()
    config = tiny_qa_config(
        "bert", vocab_size=tok.vocab_size, hidden_size=16, num_hidden_layers=1, intermediate_size=32
    )
    config.num_labels = 3
    config.id2label = dict(id2label)
    config.label2id = {v: k for k, v in id2label.items()}
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_config(config)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.copy_(torch.tensor(bias))
    model.eval().save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


@pytest.fixture(scope="module")
def nli_dirs(tmp_path_factory):
    base = tmp_path_factory.mktemp("nli")
    # deberta-v3 NLI order (contradiction, entailment, neutral), entailment-heavy
    entail = build_nli_standin(base / "entail", {0: "contradiction", 1: "entailment", 2: "neutral"}, [0.0, 3.0, 0.0])
    # another order, where index 1 is neutral: a hard-coded deberta order would read 0.91 as entailment
    neutral = build_nli_standin(base / "neutral", {0: "ENTAILMENT", 1: "NEUTRAL", 2: "CONTRADICTION"}, [0.0, 3.0, 0.0])
    unlabeled = build_nli_standin(base / "unlabeled", {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}, [0.0, 0.0, 0.0])
    return {"entail": entail, "neutral": neutral, "unlabeled": unlabeled}


def test_nli_standin_labels_follow_config(nli_dirs):
    v = verifier(backend="nli", model=nli_dirs["entail"], device="cpu")
    assert v.served_by == f"{nli_dirs['entail']} (path)"
    probs = v.nli_probabilities("premise", "hypothesis")
    assert probs["entailment"] == pytest.approx(0.9094, abs=1e-3)  # e^3 / (e^3 + 2)
    assert probs["neutral"] == pytest.approx(probs["contradiction"]) == pytest.approx(0.0453, abs=1e-3)
    out = v.run(query=QUERY, answers=[ans("30 days", 107, 114)], documents=[doc(18, 127)])
    assert out["answers"][0].meta["verdict"] == "SUPPORTED"
    assert out["answers"][0].meta["reason"] == "nli: entailment 0.91, neutral 0.05, contradiction 0.05"
    # the premise was lead-in + evidence: both are in the spans, after the answer
    spans = [(s["char_start"], s["char_end"]) for s in out["answers"][0].meta["spans"]]
    assert spans == [(107, 114), (18, 77), (78, 127)]

    v = verifier(backend="nli", model=nli_dirs["neutral"], device="cpu")
    out = v.run(query=QUERY, answers=[ans("30 days", 107, 114)], documents=[doc(78, 127)])
    assert out["widen"][0].meta["route"][-3:] == ["read", "verify:PARTIAL", "widen:paragraph"]


def test_nli_model_without_nli_labels_is_rejected(nli_dirs):
    with pytest.raises(SpanQAError, match="not an entailment classifier"):
        verifier(backend="nli", model=nli_dirs["unlabeled"], device="cpu")


def test_nli_premise_hypothesis_and_threshold_mapping(nli_dirs, monkeypatch):
    v = verifier(
        backend="nli", model=nli_dirs["entail"], device="cpu", entail_threshold=0.6, contradiction_threshold=0.4
    )
    seen = []
    scripted = iter([
        {"entailment": 0.61, "neutral": 0.30, "contradiction": 0.09},  # SUPPORTED
        {"entailment": 0.55, "neutral": 0.05, "contradiction": 0.40},  # UNSUPPORTED (>= 0.4)
        {"entailment": 0.50, "neutral": 0.40, "contradiction": 0.10},  # PARTIAL
    ])

    def fake(premise, hypothesis):
        seen.append((premise, hypothesis))
        return next(scripted)

    monkeypatch.setattr(v, "nli_probabilities", fake)
    docs = [doc(18, 127)]
    a = [ans("30 days", 107, 114)]
    assert "answers" in v.run(query=QUERY, answers=a, documents=docs)
    assert v.run(query=QUERY, answers=a, documents=docs)["widen"][0].meta["widen_to"] == "passage"
    assert v.run(query=QUERY, answers=a, documents=docs)["widen"][0].meta["widen_to"] == "paragraph"
    assert seen[0] == (SOURCE[18:127], f"{QUERY} 30 days")
    # an answer that is not in the read text never reaches the model
    out = v.run(query=QUERY, answers=[ans("45 days", 0, 7)], documents=docs)
    assert out["widen"][0].meta["route"][-2] == "verify:UNSUPPORTED" and len(seen) == 3

    template = "The answer to '{question}' is {answer}."
    v2 = verifier(backend="nli", model=nli_dirs["entail"], hypothesis_template=template)
    scripted = iter([{"entailment": 1.0, "neutral": 0.0, "contradiction": 0.0}])
    monkeypatch.setattr(v2, "nli_probabilities", fake)
    v2.run(query=QUERY, answers=a, documents=docs)
    assert seen[-1] == (SOURCE[18:127], f"The answer to '{QUERY}' is 30 days.")


def test_nli_fallback_to_lexical(caplog):
    v = VerifierRouter(backend="nli", model=MISSING, fallback="lexical")
    with caplog.at_level(logging.WARNING):
        v.warm_up()
    assert v.served_by == f"fallback:lexical ({MISSING} unavailable)"
    assert v.active_backend == "lexical"
    assert any(MISSING in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)
    out = v.run(query=QUERY, answers=[ans("30 days", 107, 114)], documents=[doc(18, 127)])
    assert out["answers"][0].meta["reason"] == "supported: answer in the evidence with 'Acme Pro'"


def test_nli_without_fallback_raises():
    with pytest.raises(ModelUnavailableError, match=MISSING):
        VerifierRouter(backend="nli", model=MISSING).warm_up()


# -------------------------------------------------------------------------------------- LLM backend


class FakeGenerator:
    def __init__(self, replies, fail=False):
        self.replies, self.fail, self.calls, self.served_by = list(replies), fail, [], ""

    def warm_up(self):
        if self.fail:
            raise ModelUnavailableError("judge model missing")
        self.served_by = "fake-judge (path)"

    def generate(self, messages, max_new_tokens):
        self.calls.append((messages, max_new_tokens))
        return types.SimpleNamespace(text=self.replies.pop(0), prompt_tokens=10, completion_tokens=5)


@pytest.fixture
def fake_generation(monkeypatch):
    made = []

    def install(gen):
        module = types.ModuleType("components.core.backends.generation")

        def make_generator(backend, **params):
            made.append((backend, params))
            return gen

        module.make_generator = make_generator
        monkeypatch.setitem(sys.modules, "components.core.backends.generation", module)
        return made

    return install


def test_llm_judge(fake_generation):
    gen = FakeGenerator(["SUPPORTED - states 30 days for Acme Pro.", "Hmm, no idea"])
    made = fake_generation(gen)
    v = verifier(backend="llm", generator={"backend": "local", "model": "some/judge"}, max_new_tokens=20)
    assert made == [("local", {"model": "some/judge", "component": "VerifierRouter"})]
    assert v.served_by == "fake-judge (path)"
    out = v.run(query=QUERY, answers=[ans("30 days", 107, 114)], documents=[doc(18, 127)])
    assert out["answers"][0].meta["reason"] == "llm: states 30 days for Acme Pro."
    messages, budget = gen.calls[0]
    assert budget == 20
    assert messages[1]["content"].startswith(f"Evidence:\n{SOURCE[18:127]}\n\nQuestion: {QUERY}\nAnswer: 30 days\n")
    out = v.run(query=QUERY, answers=[ans("30 days", 107, 114)], documents=[doc(18, 127)])
    assert out["widen"][0].meta["route"][-2:] == ["verify:UNSUPPORTED", "widen:passage"]


def test_llm_unavailable_falls_back_or_raises(fake_generation):
    fake_generation(FakeGenerator([], fail=True))
    v = verifier(backend="llm", generator={"backend": "local", "model": "some/judge"}, fallback="lexical")
    assert v.served_by == "fallback:lexical (some/judge unavailable)"
    with pytest.raises(ModelUnavailableError):
        verifier(backend="llm", generator={"backend": "local", "model": "some/judge"})


# ------------------------------------------------------------------------------------ serialisation


def test_to_dict_from_dict_round_trip():
    v = VerifierRouter(
        backend="nli", model="x/y", max_level="paragraph", lead_in_units=1, entail_threshold=0.7,
        fallback="lexical", hypothesis_template="{answer}? {question}", generator={"backend": "local"},
    )
    data = v.to_dict()
    assert data["type"] == "components.routers.verifier_router.VerifierRouter"
    assert data["init_parameters"]["entail_threshold"] == 0.7
    assert data["init_parameters"]["generator"] == {"backend": "local"}
    w = VerifierRouter.from_dict(data)
    assert w.to_dict() == data
    assert (w.backend, w.model, w.max_level, w.lead_in_units, w.fallback) == ("nli", "x/y", "paragraph", 1, "lexical")


def test_loop_pipeline_yaml_round_trip():
    p = Pipeline(max_runs_per_component=3)
    p.add_component("branch", BranchJoiner(list[Document]))
    p.add_component("verifier", VerifierRouter(backend="nli", fallback="lexical", max_level="paragraph"))
    p.connect("branch.value", "verifier.documents")
    p.connect("verifier.widen", "branch.value")
    text = p.dumps()
    assert "components.routers.verifier_router.VerifierRouter" in text
    q = Pipeline.loads(text, allowed_modules=["components"])  # Haystack 3 refuses unlisted modules
    assert q.to_dict() == p.to_dict()
    assert q.get_component("verifier").max_level == "paragraph"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"backend": "bm25"}, "parameter 'backend' is 'bm25', but it must be one of 'lexical', 'nli', 'llm'"),
        ({"fallback": "sentence"}, "parameter 'fallback' is 'sentence', but it must be one of 'lexical', 'trained', None"),
        ({"max_level": "window"}, "parameter 'max_level' is 'window', but it must be one of 'paragraph', 'passage'"),
        ({"lead_in_units": -1}, "parameter 'lead_in_units' is -1, but it must be a whole number ≥ 0"),
        ({"max_candidates": 0}, "parameter 'max_candidates' is 0, but it must be a whole number ≥ 1"),
        ({"backend": "llm"}, "needs generator"),
    ],
)
def test_bad_init_parameters(kwargs, message):
    with pytest.raises(ParameterError) as err:
        VerifierRouter(**kwargs)
    assert str(err.value).startswith("VerifierRouter: ") and message in str(err.value)


def test_run_without_warm_up_warms_itself_with_the_same_outcome():
    # one contract for every component: run() warms a bare component once; the outcome is warm_up()'s own
    with pytest.raises(ModelUnavailableError, match=MISSING):
        VerifierRouter(backend="nli", model=MISSING).run(query=QUERY, answers=[], documents=[doc(18, 127)])
    router = VerifierRouter(backend="nli", model=MISSING, fallback="lexical")
    out = router.run(query=QUERY, answers=[], documents=[doc(18, 127)])
    assert router.served_by == f"fallback:lexical ({MISSING} unavailable)" and list(out) == ["widen"]


# ------------------------------------------------------------------------------ real Haystack loop


@component
class ScriptedReader:
    """Returns the scripted (text, start, end) answer of each call; records what it read."""

    def __init__(self, script):
        self.script = list(script)
        self.calls = []

    @component.output_types(answers=list[ExtractedAnswer])
    def run(self, query: str, documents: list[Document]):
        self.calls.append([(d.meta["level"], d.meta["char_start"], d.meta["char_end"]) for d in documents])
        text, start, end = self.script[len(self.calls) - 1]
        return {"answers": [ans(text, start, end, score=0.5)]}


@component
class BlockWidener:
    """Widens each document to its paragraph (block of SOURCE) or to the whole SOURCE (passage)."""

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]):
        out = []
        for d in documents:
            to = d.meta["widen_to"]
            if to == "passage":
                s, e = 0, len(SOURCE)
            else:
                b = next(b for b in split_blocks(SOURCE) if b.start <= d.meta["char_start"] < b.end)
                s, e = b.start, b.end
            meta = {k: v for k, v in d.meta.items() if k != "widen_to"}
            out.append(Document(content=SOURCE[s:e], meta={**meta, "char_start": s, "char_end": e, "level": to}))
        return {"documents": out}


def loop_pipeline(script, max_runs=3):
    p = Pipeline(max_runs_per_component=max_runs)
    p.add_component("branch", BranchJoiner(list[Document]))
    p.add_component("reader", ScriptedReader(script))
    p.add_component("verifier", VerifierRouter())
    p.add_component("widener", BlockWidener())
    p.connect("branch.value", "reader.documents")
    p.connect("branch.value", "verifier.documents")
    p.connect("reader.answers", "verifier.answers")
    p.connect("verifier.widen", "widener.documents")
    p.connect("widener.documents", "branch.value")
    return p


def run_loop(p, docs):
    return p.run({"branch": {"value": docs}, "reader": {"query": QUERY}, "verifier": {"query": QUERY}})


WINDOWS = [doc(78, 127), doc(0, 16)]  # the answer sentence, and the heading as a separate window


def test_loop_reaches_not_found_after_two_widenings():
    p = loop_pipeline([("30 days", 107, 114), ("14 days", 202, 209), ("45 days", 0, 7)])
    out = run_loop(p, WINDOWS)
    assert list(out) == ["verifier"] and list(out["verifier"]) == ["not_found"]
    (nf,) = out["verifier"]["not_found"]
    assert nf.meta["route"] == [
        *ROUTE,
        "read", "verify:PARTIAL", "widen:paragraph",
        "read", "verify:UNSUPPORTED", "widen:passage",
        "read", "verify:UNSUPPORTED",
    ]
    assert (nf.meta["reason"], nf.meta["candidate"]) == ("answer_not_in_documents", "45 days")
    assert p.get_component("reader").calls == [
        [("window", 78, 127), ("window", 0, 16)],
        [("paragraph", 18, 127), ("paragraph", 0, 16)],
        [("passage", 0, 277), ("passage", 0, 277)],
    ]


def test_loop_supported_after_one_widening():
    p = loop_pipeline([("30 days", 107, 114), ("30 days", 107, 114)])
    out = run_loop(p, WINDOWS)
    (a,) = out["verifier"]["answers"]
    assert a.meta["route"] == [*ROUTE, "read", "verify:PARTIAL", "widen:paragraph", "read", "verify:SUPPORTED"]
    assert a.meta["spans"][1]["text"] == "Acme Pro is billed every month."
    assert len(p.get_component("reader").calls) == 2


def test_loop_wrong_span_then_right_span():
    p = loop_pipeline([("14 days", 202, 209), ("30 days", 107, 114)])
    out = run_loop(p, [doc(78, 127)])
    (a,) = out["verifier"]["answers"]
    assert a.meta["route"] == [*ROUTE, "read", "verify:UNSUPPORTED", "widen:passage", "read", "verify:SUPPORTED"]
    assert p.get_component("reader").calls == [[("window", 78, 127)], [("passage", 0, 277)]]


def test_loop_is_bounded_by_max_runs_per_component():
    # window -> paragraph -> passage needs three reader runs; a budget of two stops Haystack itself
    p = loop_pipeline([("30 days", 107, 114), ("14 days", 202, 209), ("45 days", 0, 7)], max_runs=2)
    with pytest.raises(PipelineMaxComponentRuns, match="Maximum run count 2"):
        run_loop(p, WINDOWS)


def test_max_candidates_verifies_the_next_answer_when_the_best_is_not_supported():
    answers = [ans("14 days", 202, 209, score=0.9), ans("30 days", 107, 114, score=0.7)]
    out = verifier().run(query=QUERY, answers=answers, documents=[doc(18, 210)])
    assert "widen" in out  # only the best (unsupported) answer is judged
    out = verifier(max_candidates=2).run(query=QUERY, answers=answers, documents=[doc(18, 210)])
    assert out["answers"][0].data == "30 days" and out["answers"][0].meta["verdict"] == "SUPPORTED"


def _judging(v, verdicts):
    """``v.judge`` replaced by a table of (verdict, P(right)) per answer text — the model's place, so the choice
    among judged answers is what is tested — and the list of the answers it was asked about."""
    from components.core.verification.judgements import Judgement

    asked = []

    def judge(query, answer, visibles):
        asked.append(answer.data)
        verdict, p = verdicts[answer.data]
        return Judgement(verdict, f"{verdict.lower()}: verifier P(right) {p}", probability=p), v.locate(answer, visibles)

    v.judge = judge
    return asked


def test_most_probable_passes_on_the_supported_answer_the_verifier_rates_highest():
    answers = [ans("14 days", 202, 209, score=0.9), ans("30 days", 107, 114, score=0.8),
               ans("24 hours", 270, 278, score=0.7)]
    table = {"14 days": ("SUPPORTED", 0.55), "30 days": ("SUPPORTED", 0.93), "24 hours": ("PARTIAL", 0.3)}
    first = verifier(max_candidates=3, conflict_candidates=0)
    asked = _judging(first, table)
    out = first.run(query=QUERY, answers=answers, documents=[doc(18, 277)])
    # "first" stops judging at the first SUPPORTED (the confidence's signals may judge the runner-up afterwards)
    assert out["answers"][0].data == "14 days" and asked[0] == "14 days" and "24 hours" not in asked
    probable = verifier(max_candidates=3, candidate_choice="most_probable", conflict_candidates=0)
    asked = _judging(probable, table)
    out = probable.run(query=QUERY, answers=answers, documents=[doc(18, 277)])
    assert asked[:3] == ["14 days", "30 days", "24 hours"]  # all three judged, in the reader's order
    got = out["answers"][0]
    assert got.data == "30 days" and got.meta["verdict"] == "SUPPORTED"
    assert SOURCE[got.meta["char_start"]:got.meta["char_end"]] == "30 days"
    assert probable.to_dict()["init_parameters"]["candidate_choice"] == "most_probable"
    assert VerifierRouter.from_dict(probable.to_dict()).candidate_choice == "most_probable"


def test_choose_judged_keeps_the_reader_order_on_ties_and_without_probabilities():
    from components.core.verification.answers import choose_judged
    from components.core.verification.judgements import Judgement

    s = lambda p: Judgement("SUPPORTED", "supported", probability=p)  # noqa: E731
    partial = Judgement("PARTIAL", "verifier_unsure", probability=0.4)
    judged = [("a", partial, None), ("b", s(0.7), None), ("c", s(0.7), None), ("d", s(0.6), None)]
    assert choose_judged(judged, "most_probable")[0] == "b"  # a tie goes to the reader's better answer
    assert choose_judged(judged, "first")[0] == "b"
    rules = [("a", Judgement("SUPPORTED", "supported"), None), ("b", s(0.9), None)]
    assert choose_judged(rules, "most_probable")[0] == "a"  # no probability: the reader's order
    assert choose_judged([("a", partial, None), ("b", partial, None)], "most_probable")[0] == "a"  # none passes
    assert choose_judged([], "most_probable") is None
    with pytest.raises(ValueError, match="choice must be one of"):
        choose_judged(judged, "best")


def test_an_unknown_candidate_choice_is_refused_with_the_choices():
    with pytest.raises(ParameterError, match="candidate_choice"):
        VerifierRouter(candidate_choice="highest")
