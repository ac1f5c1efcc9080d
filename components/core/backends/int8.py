"""int8 on the CPU: torch dynamic quantisation, with SmoothQuant-style smoothing where a model ships its
activation ranges.

Dynamic quantisation gives each ``nn.Linear`` int8 weights (one scale per output channel) and quantises its input
on every call with **one scale for the whole tensor**. A transformer's activations have a few channels hundreds of
times larger than the rest, so that one scale rounds the small channels to a handful of levels — the trained
reader kept only 70.8 % of its fp32 answer spans that way. Smoothing (Xiao et al. 2023, "SmoothQuant") moves the
range from the activation into the weight, exactly: for input channel ``j`` with activation range ``a_j`` and
weight range ``w_j`` it divides the input by ``s_j = a_j**alpha / w_j**(1 - alpha)`` and multiplies the weight's
column by it, so ``(x / s) @ (W * s).T == x @ W.T`` in exact arithmetic, while the quantised input is flat enough
for one scale and the weight, quantised per output channel, absorbs the range.

The ranges ``a_j`` come from running the fp32 model on calibration text (``training/int8_calibrate.py``: held-out
training articles, never the development article) and are shipped beside the weights as ``int8_absmax.safetensors``
with the chosen ``alpha`` in its metadata. A model without that file is quantised without smoothing, and
``describe`` says which it got (``int8`` or ``int8 smoothed``).

    from components.core.backends.int8 import collect_absmax, quantize_int8, save_absmax
    absmax = collect_absmax(model, lambda: model(**batch))      # fp32 ranges of every Linear's input
    save_absmax(model_dir, absmax, alpha=0.9)
    model = quantize_int8(model, model_dir=model_dir)           # smoothed, then int8
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from components.core.errors import SpanQAError

ABSMAX_FILE = "int8_absmax.safetensors"


def smoothing_scales(act_absmax, weight, alpha: float):
    """Per input channel ``s_j = a_j**alpha / w_j**(1-alpha)`` (``w_j`` the largest |weight| in column ``j``);
    both ranges floored at 1e-5 so a dead channel gets a finite scale."""
    w = weight.detach().abs().amax(0).clamp(min=1e-5)
    return (act_absmax.clamp(min=1e-5) ** alpha / w ** (1 - alpha)).clamp(min=1e-5)


def _smoothed_linear_class():
    import torch

    class SmoothedLinear(torch.nn.Module):
        """``linear(x * inv_scale)`` with the scale already multiplied into ``linear``'s weight columns."""

        def __init__(self, linear, inv_scale):
            super().__init__()
            self.linear = linear
            self.register_buffer("inv_scale", inv_scale)

        def forward(self, x):
            return self.linear(x * self.inv_scale)

    return SmoothedLinear


def smooth_linears(model, absmax: dict, alpha: float) -> int:
    """Smooth, in place, every ``nn.Linear`` of ``model`` whose name is in ``absmax``; returns how many. The model
    computes the same function afterwards (up to float rounding); only its quantisation changes."""
    import torch

    smoothed_cls = _smoothed_linear_class()
    done = 0
    for parent_name, parent in list(model.named_modules()):
        for child_name, child in list(parent.named_children()):
            name = f"{parent_name}.{child_name}" if parent_name else child_name
            if not isinstance(child, torch.nn.Linear) or name not in absmax:
                continue
            a = absmax[name].to(child.weight.device, torch.float32)
            if a.shape[0] != child.in_features:
                raise SpanQAError(f"int8: the activation ranges for '{name}' have {a.shape[0]} channels, the layer "
                                  f"takes {child.in_features}; the {ABSMAX_FILE} beside the model was made for "
                                  "another model. Delete it, or run training/int8_calibrate.py for this model.")
            s = smoothing_scales(a, child.weight, alpha)
            with torch.no_grad():
                child.weight.mul_(s)
            setattr(parent, child_name, smoothed_cls(child, 1.0 / s))
            done += 1
    return done


def collect_absmax(model, run: Callable[[], object]) -> dict:
    """The largest |value| per input channel of every ``nn.Linear`` while ``run()`` drives ``model`` (fp32)."""
    import torch

    absmax: dict = {}
    hooks = []
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear):
            def hook(_mod, inputs, _out, name=name):
                a = inputs[0].detach().abs().reshape(-1, inputs[0].shape[-1]).amax(0).float().cpu()
                absmax[name] = torch.maximum(absmax[name], a) if name in absmax else a
            hooks.append(module.register_forward_hook(hook))
    try:
        with torch.no_grad():
            run()
    finally:
        for h in hooks:
            h.remove()
    return absmax


def save_absmax(model_dir, absmax: dict, alpha: float, note: str = "") -> Path:
    """Write ``int8_absmax.safetensors`` (one fp32 vector per Linear, ``alpha`` and ``note`` in the metadata)."""
    from safetensors.torch import save_file

    path = Path(model_dir) / ABSMAX_FILE
    save_file({k: v.contiguous() for k, v in absmax.items()}, str(path), metadata={"alpha": str(alpha), "note": note})
    return path


def load_absmax(model_dir) -> tuple[dict, float] | None:
    """``(absmax, alpha)`` shipped beside a model, or None when it has none."""
    if not model_dir:
        return None
    path = Path(model_dir) / ABSMAX_FILE
    if not path.is_file():
        return None
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as fh:
            alpha = float((fh.metadata() or {})["alpha"])
            return {k: fh.get_tensor(k) for k in fh.keys()}, alpha
    except Exception as exc:  # noqa: BLE001 - a damaged file is a clear error, not a traceback
        raise SpanQAError(f"int8: cannot read {path} ({type(exc).__name__}: {exc}). Delete it (the model then "
                          "quantises without smoothing) or write it again with training/int8_calibrate.py.") from exc


def has_smoothing(model_dir) -> bool:
    return bool(model_dir) and (Path(model_dir) / ABSMAX_FILE).is_file()


def quantize_int8(model, device: str = "cpu", model_dir=None, absmax: tuple[dict, float] | None = None):
    """The model with every ``nn.Linear`` dynamically quantised to int8 (torch): weights int8 with one scale per
    output channel, activations quantised per call — smoothed first when ``model_dir`` ships activation ranges
    (or ``absmax=(ranges, alpha)`` is given). CPU only."""
    import torch

    if not str(device).startswith("cpu"):
        raise SpanQAError(f"precision: int8 (torch dynamic quantisation) runs on the CPU only, not on {device}; "
                          f"use precision: fp32 there.")
    from torch.ao.quantization import per_channel_dynamic_qconfig

    ranges = absmax if absmax is not None else load_absmax(model_dir)
    if ranges is not None and smooth_linears(model, *ranges) == 0:
        raise SpanQAError(f"int8: the activation ranges beside {model_dir} name none of this model's layers; they "
                          "were made for another model. Delete them, or run training/int8_calibrate.py for it.")
    return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear: per_channel_dynamic_qconfig},
                                                  dtype=torch.qint8, inplace=True)
