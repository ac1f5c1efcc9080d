"""int8 on the CPU: every ``nn.Linear`` that widens or keeps its width becomes an int8 × int8 → int32 matrix
product with **one scale per token** for the input and one scale per output channel for the weight; the layers
that narrow (``in_features > out_features``: each feed-forward block's down-projection, which reads the wide
activation after GELU, and the task heads) stay in fp32.

Why per token: torch's dynamic quantisation (``quantize_dynamic``) quantises a layer's whole input with one scale.
A transformer's tokens differ in size by orders of magnitude ([CLS], [SEP] and a few others carry huge values), so
one scale rounds the ordinary tokens to a handful of levels. With one scale per token the trained reader keeps
nearly every fp32 answer span — about as many as int8 weights alone (fp32 inputs) keep, so the rest of the gap is
the weights, not the inputs.

Why the narrowing layers stay fp32: measured layer by layer on 1,000 questions of the held-out training articles
(the answer span at the reader's null bias, against fp32), int8 everywhere kept 97.1 % of the spans at 1.65× the
fp32 speed; the heads and the last layer in fp32 changed nothing (97.0–97.3 %), the first layer little (97.4 %);
the six feed-forward down-projections in fp32 kept **98.4 %** at 1.32× — the error is in the wide activation
those layers read (a known trait of BERT-style models: its outliers sit there), not in depth. Slicing that input
into groups with their own scales (earlier rounds) kept fewer spans than fp32 there and took longer than fp32 itself;
SmoothQuant-style smoothing helped
dynamic quantisation less and per-token scales not at all, and needed a calibration file per model. The rule
reads only layer shapes, so every model (reader, ranker, embedder, hub or ours) quantises the same way.
The numbers: ``docs/performance.md``.

The product runs in ``torch._int_mm`` (int8 GEMM with int32 accumulation, exact), so the int8 weights are a quarter
of fp32 in memory and the product is integer work.

    from components.core.backends.int8 import quantize_int8
    model = quantize_int8(model)            # in place; CPU only
"""

from __future__ import annotations

import functools

from components.core.errors import SpanQAError

# names the scheme in index keys (core/retrieval/index.py): vectors of another int8 scheme never answer this one's
# queries. "per-token" quantised every Linear; indexes built with torch's dynamic quantisation had no name.
INT8_SCHEME = "per-token, narrowing layers fp32"


def quantize_rows(x, dim: int = -1):
    """Symmetric int8 with one scale per slice along ``dim``: ``(q, scale)`` with ``q * scale ≈ x`` and
    ``|q| ≤ 127``; an all-zero slice gets scale 1e-8/127 and stays zero."""
    import torch

    scale = x.abs().amax(dim, keepdim=True).clamp_(min=1e-8).div_(127.0)
    return (x / scale).round_().to(torch.int8), scale  # |x / scale| <= 127 by construction


@functools.lru_cache(maxsize=1)
def int8_linear_class():
    """The ``Int8Linear`` module class (built on first use, so importing spanqa does not import torch)."""
    import torch

    class Int8Linear(torch.nn.Module):
        """``nn.Linear`` in int8: the weight quantised once per output channel, the input per token on each call;
        the int32 product (``torch._int_mm``) rescaled to fp32, the bias added in fp32."""

        def __init__(self, linear: torch.nn.Linear):
            super().__init__()
            self.in_features, self.out_features = linear.in_features, linear.out_features
            q, scale = quantize_rows(linear.weight.detach().float())  # [out, in]: one scale per output channel
            self.register_buffer("weight_t", q.t().contiguous())  # [in, out] for x @ W.T
            self.register_buffer("weight_scale", scale.reshape(1, -1))
            bias = linear.bias.detach().float().clone() if linear.bias is not None else None
            self.register_buffer("bias", bias)

        def forward(self, x):
            shape = x.shape
            q, scale = quantize_rows(x.reshape(-1, self.in_features).float())  # one scale per token
            y = torch._int_mm(q, self.weight_t).to(torch.float32).mul_(scale).mul_(self.weight_scale)
            if self.bias is not None:
                y.add_(self.bias)
            return y.reshape(*shape[:-1], self.out_features)

        def extra_repr(self) -> str:
            return f"in_features={self.in_features}, out_features={self.out_features}, int8 per token"

    return Int8Linear


def stays_fp32(linear) -> bool:
    """True for a layer that narrows its input (``in_features > out_features``): a feed-forward down-projection
    or a task head, kept in fp32 (see the module docstring)."""
    return linear.in_features > linear.out_features


def quantize_int8(model, device: str = "cpu"):
    """``model`` with every ``nn.Linear`` that does not narrow replaced, in place, by an ``Int8Linear`` (see the
    module docstring). CPU only: the GPU runs fp32 (or its own half precision) faster."""
    import torch

    if not str(device).startswith("cpu"):
        raise SpanQAError(f"precision: int8 runs on the CPU only, not on {device}; use precision: fp32 there.")
    for _parent_name, parent in list(model.named_modules()):
        for child_name, child in list(parent.named_children()):
            if type(child) is torch.nn.Linear and not stays_fp32(child):
                setattr(parent, child_name, int8_linear_class()(child))
    return model
