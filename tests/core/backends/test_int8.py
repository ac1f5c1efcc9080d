"""The int8 profile: torch dynamic quantisation replaces every Linear, and a quantised stand-in QA model stays
close to its fp32 self (the benchmark measures answer agreement at full size)."""

import copy

import pytest
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


def test_collect_absmax_is_the_largest_magnitude_per_input_channel():
    from components.core.backends.int8 import collect_absmax

    lin = torch.nn.Linear(2, 1)
    model = torch.nn.Sequential(lin)
    absmax = collect_absmax(model, lambda: (model(torch.tensor([[1.0, -3.0]])), model(torch.tensor([[2.0, 0.5]]))))
    assert list(absmax) == ["0"] and absmax["0"].tolist() == [2.0, 3.0]


def test_smoothing_keeps_the_function_and_rescues_small_channels_next_to_an_outlier():
    """One input channel 100x the others (as in a transformer's activations): one int8 scale for the whole input
    rounds the small channels away; smoothed first, the quantised layer keeps them."""
    from components.core.backends.int8 import quantize_int8, smooth_linears

    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 4)
    x = torch.randn(16, 8) * 0.3
    x[:, 0] = 100.0 * torch.sign(x[:, 0])  # the outlier channel
    ranges = {"0": x.abs().amax(0)}
    fp32 = torch.nn.Sequential(copy.deepcopy(lin))
    smoothed = torch.nn.Sequential(copy.deepcopy(lin))
    assert smooth_linears(smoothed, ranges, 0.9) == 1
    with torch.no_grad():
        ref = fp32(x)
        assert torch.allclose(smoothed(x), ref, atol=1e-4)  # the same function before quantising
        plain = quantize_int8(torch.nn.Sequential(copy.deepcopy(lin)), "cpu")(x)
        smooth = quantize_int8(torch.nn.Sequential(copy.deepcopy(lin)), "cpu", absmax=(ranges, 0.9))(x)
    err_plain, err_smooth = (plain - ref).abs().mean(), (smooth - ref).abs().mean()
    assert err_smooth < err_plain / 4, (err_plain, err_smooth)


def test_shipped_ranges_are_loaded_announced_and_checked(tmp_path):
    from components.core.backends.int8 import save_absmax
    from components.core.backends.models import ResolvedModel
    from components.core.errors import SpanQAError

    path = build_qa_model(tmp_path / "qa")
    tok, fp32 = load_hf_model(str(path), "AutoModelForQuestionAnswering", "cpu")
    plain = ResolvedModel("m", str(path), "path").describe("int8")
    from components.core.backends.int8 import collect_absmax

    enc = tok(["How long is the refund window?"], ["Annual plans can be refunded within 30 days of purchase."],
              return_tensors="pt")
    inputs = {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
    save_absmax(path, collect_absmax(fp32, lambda: fp32(**inputs)), alpha=0.9, note="test")
    assert plain == "m (path, int8)" and ResolvedModel("m", str(path), "path").describe("int8") == "m (path, int8 smoothed)"
    _, int8 = load_hf_model(str(path), "AutoModelForQuestionAnswering", "cpu", precision="int8")
    assert sum(type(m).__name__ == "SmoothedLinear" for m in int8.modules()) == sum(
        type(m) is torch.nn.Linear for m in fp32.modules())
    with torch.inference_mode():
        a, b = fp32(**inputs).start_logits, int8(**inputs).start_logits
    assert torch.allclose(a, b, atol=0.1 * float(a.abs().max()) + 1e-3)
    # ranges made for another model: one clear paragraph, not a shape error from deep inside torch
    other = build_qa_model(tmp_path / "other")
    save_absmax(other, {"qa_outputs": torch.ones(7)}, alpha=0.9)
    with pytest.raises(SpanQAError, match="made for another model"):
        load_hf_model(str(other), "AutoModelForQuestionAnswering", "cpu", precision="int8")
