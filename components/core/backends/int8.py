"""int8 on the CPU: every ``nn.Linear`` becomes an int8 × int8 → int32 matrix product with **one scale per token**
for the input and one scale per output channel for the weight — per slice of the hidden width for a layer wider than
that (a transformer's feed-forward output).

Why per token: torch's dynamic quantisation (``quantize_dynamic``) quantises a layer's whole input with one scale.
A transformer's tokens differ in size by orders of magnitude ([CLS], [SEP] and a few others carry huge values), so
one scale rounds the ordinary tokens to a handful of levels. With one scale per token the trained reader keeps
nearly every fp32 answer span — about as many as int8 weights alone (fp32 inputs) keep, so the rest of the gap is
the weights, not the inputs; slicing the feed-forward output (1,536 channels) into hidden-width groups closes part
of that at almost no cost (finer slices closed more and cost more than fp32 itself). SmoothQuant-style smoothing of channel outliers, measured in the same runs, helped
dynamic quantisation less and per-token scales not at all, and needed calibration files per model; per-token scales
need none, so every model (reader, ranker, embedder, hub or ours) quantises the same way. The numbers, on held-out
training articles and the development article: ``docs/performance.md``.

The product runs in ``torch._int_mm`` (int8 GEMM with int32 accumulation, exact; the kernel torchao's int8
dynamic quantisation uses), so the int8 weights are a quarter of fp32 in memory and the product is integer work.

    from components.core.backends.int8 import quantize_int8
    model = quantize_int8(model)            # in place; CPU only
"""

from __future__ import annotations

import functools

from components.core.errors import SpanQAError


def quantize_rows(x, dim: int = -1):
    """Symmetric int8 with one scale per slice along ``dim``: ``(q, scale)`` with ``q * scale ≈ x`` and
    ``|q| ≤ 127``; an all-zero slice gets scale 1e-8/127 and stays zero."""
    import torch

    scale = x.abs().amax(dim, keepdim=True).clamp(min=1e-8) / 127.0
    return torch.round(x / scale).clamp(-127, 127).to(torch.int8), scale


@functools.lru_cache(maxsize=1)
def int8_linear_class():
    """The ``Int8Linear`` module class (built on first use, so importing spanqa does not import torch)."""
    import torch

    class Int8Linear(torch.nn.Module):
        """``nn.Linear`` in int8. The input channels are cut into ``groups`` equal slices (1 unless the layer is
        wider than the model: a transformer's feed-forward output, 4 slices of the hidden width). Each slice of the
        weight is quantised once per output channel, each slice of the input per token on each call; the slices'
        int32 products (``torch._int_mm``) are rescaled to fp32 and summed, and the bias is added in fp32."""

        def __init__(self, linear: torch.nn.Linear, groups: int = 1):
            super().__init__()
            if linear.in_features % groups:
                raise ValueError(f"{linear.in_features} input channels do not split into {groups} groups")
            self.in_features, self.out_features, self.groups = linear.in_features, linear.out_features, groups
            width = linear.in_features // groups
            w = linear.weight.detach().float().reshape(linear.out_features, groups, width)
            q, scale = quantize_rows(w)  # one scale per (output channel, group)
            self.register_buffer("weight_t", q.permute(1, 2, 0).contiguous())  # [groups, width, out] for x @ W.T
            self.register_buffer("weight_scale", scale.permute(1, 2, 0).contiguous())  # [groups, 1, out]
            bias = linear.bias.detach().float().clone() if linear.bias is not None else None
            self.register_buffer("bias", bias)

        def forward(self, x):
            shape = x.shape
            flat = x.reshape(-1, shape[-1]).float()
            width = self.in_features // self.groups
            y = None
            for g in range(self.groups):
                q, scale = quantize_rows(flat[:, g * width : (g + 1) * width])
                part = torch._int_mm(q, self.weight_t[g]).to(torch.float32) * scale * self.weight_scale[g]
                y = part if y is None else y + part
            if self.bias is not None:
                y = y + self.bias
            return y.reshape(*shape[:-1], self.out_features)

        def extra_repr(self) -> str:
            return (f"in_features={self.in_features}, out_features={self.out_features}, int8 per token, "
                    f"{self.groups} group{'s' if self.groups > 1 else ''}")

    return Int8Linear



def quantize_int8(model, device: str = "cpu"):
    """``model`` with every ``nn.Linear`` replaced, in place, by an ``Int8Linear`` (see the module docstring); a
    layer wider than the model's narrowest (its hidden width) is cut into groups of that width, so no int8 dot
    product sums more channels under one pair of scales than the hidden width. CPU only: the GPU runs fp32 (or its
    own half precision) faster."""
    import torch

    if not str(device).startswith("cpu"):
        raise SpanQAError(f"precision: int8 runs on the CPU only, not on {device}; use precision: fp32 there.")
    linears = [m for m in model.modules() if type(m) is torch.nn.Linear]
    width = min((m.in_features for m in linears), default=1)  # the model's hidden width
    for _parent_name, parent in list(model.named_modules()):
        for child_name, child in list(parent.named_children()):
            if type(child) is torch.nn.Linear:
                groups = child.in_features // width if child.in_features % width == 0 else 1
                setattr(parent, child_name, int8_linear_class()(child, groups))
    return model
