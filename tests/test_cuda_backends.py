"""``arraykit.cuda``, ``arraykit.backends`` and ``arraykit.inference_mode`` against
PyTorch's and JAX's answers."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import arraykit as ak

torch = pytest.importorskip("torch")

GPUS = [d for d in jax.devices() + jax.devices("cpu") if d.platform == "gpu"]
needs_gpu = pytest.mark.skipif(not GPUS, reason="needs a GPU")
cpu_only = pytest.mark.skipif(bool(GPUS), reason="about a machine without a GPU")


def test_counts_follow_jax():
    assert ak.cuda.is_available() is bool(GPUS)
    assert ak.cuda.device_count() == len(GPUS)
    assert ak.cuda.is_bf16_supported() is bool(GPUS)


@cpu_only
def test_cpu_only_machine_is_truthful():
    assert ak.cuda.is_available() is torch.cuda.is_available() is False
    assert ak.cuda.device_count() == torch.cuda.device_count() == 0
    assert ak.cuda.memory_allocated() == torch.cuda.memory_allocated() == 0
    assert ak.cuda.max_memory_allocated() == 0
    assert ak.cuda.memory_stats() == {}
    ak.cuda.reset_peak_memory_stats()
    ak.cuda.empty_cache()
    ak.cuda.manual_seed(1)
    ak.cuda.manual_seed_all(1)
    for fn in (ak.cuda.current_device, ak.cuda.get_device_name, ak.cuda.synchronize):
        with pytest.raises(RuntimeError, match="no GPU"):
            fn()
    assert ak.backends.cudnn.is_available() is False
    assert ak.backends.cuda.is_built() is False


def test_manual_seed_checks_its_argument():
    with pytest.raises(TypeError):
        ak.cuda.manual_seed("seed")


@needs_gpu
def test_gpu_queries():
    assert ak.cuda.current_device() in range(len(GPUS))
    assert ak.cuda.get_device_name(0) == GPUS[0].device_kind
    x = ak.ones((256, 256), device=GPUS[0])
    y = x @ x
    ak.cuda.synchronize()
    assert ak.cuda.memory_allocated(0) >= y.nbytes
    ak.cuda.reset_peak_memory_stats(0)
    assert ak.cuda.max_memory_allocated(0) >= ak.cuda.memory_allocated(0) - y.nbytes
    ak.cuda.manual_seed_all(3)
    a = ak.rand(4, device=GPUS[0])
    ak.cuda.manual_seed_all(3)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(ak.rand(4, device=GPUS[0])))
    with pytest.raises(ValueError, match="out of range"):
        ak.cuda.get_device_name(len(GPUS))


def test_empty_cache_releases_the_buffer_pool():
    from arraykit.core import buffer_pool

    x = ak.ones((1 << 19,), device="cpu")  # 2 MiB: pooled when it dies
    del x
    ak.cuda.empty_cache()
    assert buffer_pool.held_bytes() == 0


@pytest.fixture
def precision():
    saved = ak.get_float32_matmul_precision()
    yield
    ak.set_float32_matmul_precision(saved)


@pytest.mark.parametrize("flag", ["matmul", "cudnn"])
def test_allow_tf32_maps_onto_matmul_precision_as_torch(precision, flag):
    saved = torch.get_float32_matmul_precision()
    try:
        for value in (True, False, True):
            if flag == "matmul":
                ak.backends.cuda.matmul.allow_tf32 = value
                torch.backends.cuda.matmul.allow_tf32 = value
                assert ak.backends.cuda.matmul.allow_tf32 is value
            else:
                ak.backends.cudnn.allow_tf32 = value
                assert ak.backends.cudnn.allow_tf32 is value
            expected = "high" if value else "highest"
            assert ak.get_float32_matmul_precision() == expected
            if flag == "matmul":
                assert torch.get_float32_matmul_precision() == expected
        ak.set_float32_matmul_precision("medium")
        torch.set_float32_matmul_precision("medium")
        assert ak.backends.cuda.matmul.allow_tf32 is torch.backends.cuda.matmul.allow_tf32 is True
        ak.backends.cuda.matmul.allow_tf32 = True  # already below "highest": kept
        assert ak.get_float32_matmul_precision() == "medium"
    finally:
        torch.set_float32_matmul_precision(saved)


def test_harmless_flags_keep_their_values():
    cudnn = ak.backends.cudnn
    saved = (cudnn.benchmark, cudnn.deterministic)
    assert saved == (torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic)
    try:
        cudnn.benchmark = True
        cudnn.deterministic = True
        assert (cudnn.benchmark, cudnn.deterministic) == (True, True)
    finally:
        cudnn.benchmark, cudnn.deterministic = saved
    assert ak.backends.mps.is_available() is False
    assert ak.backends.mps.is_built() is False


@pytest.mark.parametrize("outer", [None, "no_grad", "inference"])
@pytest.mark.parametrize("mode", [True, False])
def test_inference_mode_sets_modes_as_torch(outer, mode):
    def modes(lib):
        context = {"no_grad": lib.no_grad(), "inference": lib.inference_mode(), None: None}[outer]
        if context is not None:
            context.__enter__()
        try:
            with lib.inference_mode(mode=mode):
                inside = (lib.is_grad_enabled(), lib.is_inference_mode_enabled())
            after = (lib.is_grad_enabled(), lib.is_inference_mode_enabled())
        finally:
            if context is not None:
                context.__exit__(None, None, None)
        return inside, after

    assert modes(ak) == modes(torch)


def test_inference_mode_records_nothing_and_decorates():
    x = ak.ones(3, requires_grad=True)
    with ak.inference_mode():
        y = x * 2
    assert not y.requires_grad
    assert (x * 2).requires_grad

    @ak.inference_mode
    def bare(t):
        return t * 2

    @ak.inference_mode(mode=False)
    def off(t):
        return t * 2

    assert not bare(x).requires_grad
    with ak.no_grad():
        assert off(x).requires_grad  # as torch: mode=False turns recording on
    assert bare.__name__ == "bare"


def test_public_names_have_docstrings():
    import inspect

    modules = [ak.cuda, ak.cuda.amp, ak.amp, ak.backends, ak.backends.cuda, ak.backends.cudnn,
               ak.backends.mps, ak.compiler]
    missing = []
    for module in modules:
        for name in module.__all__:
            obj = getattr(module, name)
            if not (obj.__doc__ or "").strip():
                missing.append(f"{module.__name__}.{name}")
            if inspect.isclass(obj):
                for member, value in vars(obj).items():
                    if not member.startswith("_") and callable(value) and not (value.__doc__ or "").strip():
                        missing.append(f"{module.__name__}.{name}.{member}")
    for name in ("compile", "inference_mode", "is_inference_mode_enabled"):
        if not (getattr(ak, name).__doc__ or "").strip():
            missing.append(f"arraykit.{name}")
    assert not missing
