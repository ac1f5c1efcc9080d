"""The int8 profile: torch dynamic quantisation replaces every Linear, and a quantised stand-in QA model stays
close to its fp32 self (the benchmark measures answer agreement at full size)."""

import torch

from components.core.backends.models import load_hf_model
from tests.standins import build_qa_model


def test_int8_quantises_linears_and_stays_close(tmp_path):
    path = build_qa_model(tmp_path / "qa")
    tok, fp32 = load_hf_model(str(path), "AutoModelForQuestionAnswering", "cpu")
    _, int8 = load_hf_model(str(path), "AutoModelForQuestionAnswering", "cpu", precision="int8")
    assert not any(type(m) is torch.nn.Linear for m in int8.modules())
    assert sum(isinstance(m, torch.ao.nn.quantized.dynamic.Linear) for m in int8.modules()) == sum(
        type(m) is torch.nn.Linear for m in fp32.modules())
    quantised = [m for m in int8.modules() if isinstance(m, torch.ao.nn.quantized.dynamic.Linear)]
    assert {m.weight().qscheme() for m in quantised} == {torch.per_channel_affine}  # one scale per output row
    enc = tok(["How long is the refund window?"], ["Annual plans can be refunded within 30 days of purchase."],
              return_tensors="pt")
    with torch.inference_mode():
        inputs = {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
        a, b = fp32(**inputs).start_logits, int8(**inputs).start_logits
    assert torch.allclose(a, b, atol=0.1 * float(a.abs().max()) + 1e-3)
