"""The openai backend: keys never go over plain http to another machine unless the YAML allows it, and the
receiving host is named on stderr."""

import pytest

from components.core.errors import SpanQAError
from components.core.backends.generation import OpenAIGenerator, _is_local


def test_plain_http_to_another_host_is_refused(monkeypatch):
    monkeypatch.setenv("SPANQA_TEST_KEY", "sk-secret")
    gen = OpenAIGenerator("m", base_url="http://llm.example.com/v1", api_key_env="SPANQA_TEST_KEY", component="reader")
    with pytest.raises(SpanQAError, match="in clear text to llm.example.com.*allow_insecure_http: true"):
        gen.warm_up()


def test_allow_insecure_http_lets_it_through_and_names_the_host(monkeypatch, capsys):
    monkeypatch.setenv("SPANQA_TEST_KEY", "sk-secret")
    gen = OpenAIGenerator("m", base_url="http://llm.example.com/v1", api_key_env="SPANQA_TEST_KEY",
                          allow_insecure_http=True)
    gen.warm_up()
    err = capsys.readouterr().err
    assert "the key from SPANQA_TEST_KEY" in err and "llm.example.com" in err and "sk-secret" not in err


def test_https_and_loopback_are_fine_and_odd_schemes_are_not(monkeypatch):
    monkeypatch.setenv("SPANQA_TEST_KEY", "k")
    OpenAIGenerator("m", base_url="https://api.example.com/v1", api_key_env="SPANQA_TEST_KEY").warm_up()
    OpenAIGenerator("m", base_url="http://127.0.0.5:8080/v1", api_key_env="SPANQA_TEST_KEY").warm_up()
    with pytest.raises(SpanQAError, match="must be an http"):
        OpenAIGenerator("m", base_url="file:///etc/passwd", api_key_env="SPANQA_TEST_KEY").warm_up()
    assert _is_local("http://[::1]:1/") and _is_local("http://localhost/") and not _is_local("http://10.0.0.1/")
