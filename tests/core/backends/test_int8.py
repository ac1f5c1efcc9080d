"""The int8 profile: every Linear becomes an int8 GEMM with one scale per token for its input and one per output
channel for its weight; exact on hand-made integers, close to fp32 where one scale for the whole input is not, and
a quantised stand-in QA model stays close to its fp32 self (the benchmark measures answer agreement at full size)."""

import pytest
import torch

from components.core.backends.int8 import int8_linear_class, quantize_int8, quantize_rows
from components.core.backends.models import load_hf_model
from components.core.errors import SpanQAError
from tests.standins import build_qa_model


def test_quantize_rows_gives_one_scale_per_row_and_keeps_zero_rows_zero():
    x = torch.tensor([[127.0, -63.5, 0.0], [0.0, 0.0, 0.0], [1.0, 0.5, -0.25]])
    q, scale = quantize_rows(x)
    assert q.dtype == torch.int8 and scale.shape == (3, 1)
    assert q[0].tolist() == [127, -64, 0] and scale[0].item() == pytest.approx(1.0)  # -63.5 rounds half to even
    assert q[1].tolist() == [0, 0, 0]
    assert q[2].tolist() == [127, 64, -32] and scale[2].item() == pytest.approx(1 / 127)


def test_int8_linear_is_exact_on_values_int8_holds():
    """Inputs and weights that are already int8 multiples of their row scale come back exactly."""
    lin = torch.nn.Linear(3, 2)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor([[127.0, 2.0, -3.0], [-1.0, 0.0, 1.0]]))
        lin.bias.copy_(torch.tensor([0.5, -0.5]))
    x = torch.tensor([[127.0, -5.0, 7.0], [1.0, 1.0, 1.0]])
    int8 = int8_linear_class()(lin)
    assert int8.weight_t.dtype == torch.int8 and int8.weight_t.shape == (3, 2)
    assert torch.equal(int8(x), lin(x).detach())


def test_per_token_scales_keep_small_tokens_that_one_scale_for_the_input_rounds_away():
    torch.manual_seed(0)
    lin = torch.nn.Linear(16, 8)
    x = torch.randn(6, 16) * 0.05
    x[0] *= 2000.0  # one huge token, as [CLS]/[SEP] are in a transformer
    with torch.no_grad():
        ref = lin(x)
        ours = int8_linear_class()(lin)(x)
        one_scale = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(lin), {torch.nn.Linear},
                                                           dtype=torch.qint8)(x)
    small = slice(1, None)
    err_ours, err_one = (ours - ref)[small].abs().mean(), (one_scale - ref)[small].abs().mean()
    assert err_ours < err_one / 10, (err_ours, err_one)


def test_int8_replaces_every_linear_but_the_narrowing_ones_and_stays_close(tmp_path):
    path = build_qa_model(tmp_path / "qa")
    tok, fp32 = load_hf_model(str(path), "AutoModelForQuestionAnswering", "cpu")
    _, int8 = load_hf_model(str(path), "AutoModelForQuestionAnswering", "cpu", precision="int8")
    kept = {name for name, m in int8.named_modules() if type(m) is torch.nn.Linear}
    layers, body = fp32.config.num_hidden_layers, fp32.base_model_prefix  # a RoBERTa stand-in: the rule reads shapes
    # fp32 stay: each layer's feed-forward down-projection (intermediate -> hidden) and the span head (hidden -> 2)
    assert kept == {f"{body}.encoder.layer.{i}.output.dense" for i in range(layers)} | {"qa_outputs"}, kept
    assert sum(isinstance(m, int8_linear_class()) for m in int8.modules()) == sum(
        type(m) is torch.nn.Linear for m in fp32.modules()) - len(kept)
    assert all(isinstance(int8.get_submodule(f"{body}.encoder.layer.{i}.{name}"), int8_linear_class())
               for i in range(layers) for name in ("attention.self.query", "attention.output.dense",
                                                   "intermediate.dense"))
    enc = tok(["How long is the refund window?"], ["Annual plans can be refunded within 30 days of purchase."],
              return_tensors="pt")
    with torch.inference_mode():
        inputs = {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
        a, b = fp32(**inputs).start_logits, int8(**inputs).start_logits
    assert torch.allclose(a, b, atol=0.02 * float(a.abs().max()) + 1e-3)


def test_int8_on_a_gpu_is_a_clear_error():
    with pytest.raises(SpanQAError, match="CPU only, not on cuda"):
        quantize_int8(torch.nn.Sequential(torch.nn.Linear(2, 2)), "cuda")
