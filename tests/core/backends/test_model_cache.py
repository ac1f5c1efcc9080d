"""One model per process however a caller spells the loader's arguments."""

from components.core.backends.models import _locked_cache


def test_locked_cache_keys_on_bound_arguments_with_defaults():
    loads = []

    @_locked_cache
    def load(path: str, device: str = "cpu", precision: str = "fp32"):
        loads.append((path, device, precision))
        return object()

    first = load("m")
    assert load("m", "cpu") is first and load("m", device="cpu", precision="fp32") is first
    assert load(path="m") is first
    assert load("m", precision="int8") is not first  # a different model really is loaded
    assert loads == [("m", "cpu", "fp32"), ("m", "cpu", "int8")]
