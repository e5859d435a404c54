"""The causes SciPy's array-API tests met on arraykit (issue 29), each at its root,
against PyTorch (and NumPy for values): NumPy exports that NumPy code writes into,
the array API version setting, casting writes, 0-d formatting, ``view(dtype)``,
pickling and deepcopy, integer inputs of float functions, bool ``add``, NaN in
``min``/``max`` of any size, quiet float32 overflow.
"""

from __future__ import annotations

import copy
import gc
import pickle
import sys
import warnings

import numpy as np
import pytest
import torch

import arraykit as ak
from arraykit.core.storage import Storage

# ---------------------------------------------------------------------- np.asarray


def test_asarray_is_a_writable_shared_view_like_pytorch():
    t, tt = ak.zeros((2, 3), device="cpu"), torch.zeros((2, 3))
    for x in (t, tt):
        a = np.asarray(x)
        assert a.flags.writeable
        a[0, 1] = 5  # NumPy's write reaches the tensor
        x[1] += 2  # the tensor's write reaches the array
    np.testing.assert_array_equal(t.numpy(), tt.numpy())
    np.testing.assert_array_equal(np.asarray(t), np.asarray(tt))
    assert np.shares_memory(np.asarray(t), t.numpy())
    np.testing.assert_array_equal((t * 2).numpy(), tt.numpy() * 2)  # kernels read NumPy's writes


@pytest.mark.parametrize("view", ["row", "column", "stepped", "transposed", "scalar"])
def test_asarray_of_views_shares_memory(view):
    """``np.asarray(t[0])[:] = 7`` writes into ``t`` (it silently did not before)."""
    pick = {
        "row": lambda x: x[0], "column": lambda x: x[:, 1], "stepped": lambda x: x[:, ::2],
        "transposed": lambda x: x.T, "scalar": lambda x: x[1, 2],
    }[view]
    t, tt = ak.arange(6.0, device="cpu").reshape(2, 3), torch.arange(6.0).reshape(2, 3)
    for x in (t, tt):
        a = np.asarray(pick(x))
        a[...] = -a - 1
    np.testing.assert_array_equal(t.numpy(), tt.numpy())
    assert not np.array_equal(t.numpy(), np.arange(6.0).reshape(2, 3))


def test_asarray_copy_and_dtype_give_private_arrays():
    t = ak.ones(3, device="cpu")
    for private in (np.array(t), np.asarray(t, dtype=np.float64), t.__array__(copy=True)):
        private[0] = 9
    np.testing.assert_array_equal(t.numpy(), np.ones(3))
    np.testing.assert_array_equal(np.asarray(t, copy=False), np.ones(3))


def test_ndimage_writes_into_an_output_tensor():
    """SciPy's ``ndimage`` writes results into ``np.asarray(output)``, as with PyTorch."""
    ndimage = pytest.importorskip("scipy.ndimage")
    x = np.arange(12.0).reshape(3, 4)
    out = ak.zeros((3, 4), dtype=ak.float64, device="cpu")
    ndimage.uniform_filter(x, size=2, output=np.asarray(out))
    np.testing.assert_allclose(out.numpy(), ndimage.uniform_filter(x, size=2))


# ---------------------------------------------------------------------- API version


def test_array_api_version_setting():
    x = ak.ones(2)
    assert ak.get_array_api_version() == "2025.12"
    assert isinstance(ak.__array_namespace_info__().devices(), tuple)  # 2025.12: a tuple
    try:
        ak.set_array_api_version("2024.12")
        ns = x.__array_namespace__()
        assert ns is ak.api_2024_12 and ak.get_array_api_version() == "2024.12"
        devices = ns.__array_namespace_info__().devices()
        assert isinstance(devices, list) and devices + [None]  # SciPy's devices fixture
        assert x.__array_namespace__(api_version="2025.12") is ak
        with pytest.raises(ValueError, match="2022.12"):
            ak.set_array_api_version("2022.12")
        assert ak.get_array_api_version() == "2024.12"
    finally:
        ak.set_array_api_version("2025.12")
    assert x.__array_namespace__() is ak


# ---------------------------------------------------------------------- casting writes

VALUES = {
    "float tensor": lambda m: m.tensor([1.9, -2.7, 3.5]),
    "float64 tensor": lambda m: m.tensor([1.25, -2.5, 1e-3], dtype=m.float64),
    "int64 tensor": lambda m: m.tensor([7, -8, 300]),
    "bool tensor": lambda m: m.tensor([True, False, True]),
    "python float": lambda m: 2.75,
    "python int": lambda m: -3,
    "python bool": lambda m: True,
    "numpy float64": lambda m: np.array([0.5, -1.5, 2.5]),
}
TARGETS = ("int32", "uint8", "float32", "bool", "complex64")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("value", sorted(VALUES))
@pytest.mark.parametrize("how", ["setitem", "copy_"])
def test_writes_cast_like_pytorch(target, value, how):
    if target == "uint8" and value == "python int":
        x = ak.zeros(4, dtype=ak.uint8)
        with pytest.raises(OverflowError, match="-3"):  # NumPy 2's rule; PyTorch wraps
            x[1:] = -3
        return
    results = []
    for m in (ak, torch):
        x = m.zeros(4, dtype=getattr(m, target))
        v = VALUES[value](m)
        if m is torch and isinstance(v, np.ndarray):
            v = torch.from_numpy(v)  # PyTorch's setitem takes no NumPy array
        if how == "copy_" and not isinstance(v, (ak.Tensor, torch.Tensor)):
            v = m.asarray(v) if m is ak else torch.as_tensor(v)
        if how == "setitem":
            x[1:] = v
        else:
            x[1:].copy_(v)
        results.append(np.asarray(x.numpy() if m is ak else x.numpy()))
    if target == "uint8" and value in ("float tensor", "numpy float64", "float64 tensor"):
        pytest.skip("a negative float into uint8 is undefined in C (PyTorch and XLA differ)")
    np.testing.assert_array_equal(results[0], results[1])
    assert results[0].dtype == results[1].dtype


def test_inplace_operators_cast_same_kind_like_pytorch():
    a, ta = ak.zeros(4, dtype=ak.int32), torch.zeros(4, dtype=torch.int32)
    a[1:] += ak.asarray([1, 2, 3])  # int64 result into int32: allowed (tanhsinh's nsum)
    ta[1:] += torch.tensor([1, 2, 3])
    np.testing.assert_array_equal(a.numpy(), ta.numpy())
    f, tf = ak.ones(3, dtype=ak.float32), torch.ones(3, dtype=torch.float32)
    f *= ak.asarray([0.5, 2, 3], dtype=ak.float64)
    tf *= torch.tensor([0.5, 2, 3], dtype=torch.float64)
    np.testing.assert_array_equal(f.numpy(), tf.numpy())
    for bad in (lambda m, x: x.__iadd__(m.ones(4)), lambda m, x: x.__iadd__(1.5),
                lambda m, x: x.__itruediv__(2)):
        with pytest.raises(RuntimeError, match="can't be cast"):
            bad(torch, torch.zeros(4, dtype=torch.int32))
        x = ak.zeros(4, dtype=ak.int32)
        with pytest.raises(TypeError, match="can't be cast"):
            bad(ak, x)
        np.testing.assert_array_equal(x.numpy(), np.zeros(4))
    b = ak.zeros(2, dtype=ak.bool)
    with pytest.raises(TypeError, match="int64.*bool"):
        b += ak.ones(2, dtype=ak.int64)


def test_complex_into_real():
    x, tx = ak.zeros(2), torch.zeros(2)
    with pytest.warns(UserWarning, match="imaginary"):
        x[:] = ak.asarray([1 + 2j, -3j])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tx[:] = torch.tensor([1 + 2j, -3j])
    np.testing.assert_array_equal(x.numpy(), tx.numpy())
    with pytest.raises(TypeError, match="complex"):
        x[0] = 1j
    with pytest.raises(RuntimeError):
        tx[0] = 1j


# ---------------------------------------------------------------------- format


@pytest.mark.parametrize("spec", ["", ".3g", "8.2f", "e", ">10"])
@pytest.mark.parametrize("value", [1.23456, -0.5, 1e-7])
def test_format_of_0d_like_pytorch(spec, value):
    got = format(ak.asarray(value, dtype=ak.float64), spec)
    want = format(torch.tensor(value, dtype=torch.float64), spec)
    if spec:
        assert got == want
    assert f"{ak.asarray(value, dtype=ak.float64):{spec or 'g'}}" == format(value, spec or "g")


def test_format_of_others():
    assert f"{ak.asarray(3):d}" == f"{torch.tensor(3):d}" == "3"
    assert f"{ak.asarray(True)}" == "True"
    with pytest.raises(TypeError, match="unsupported format string"):
        format(ak.ones(2), ".3g")
    with pytest.raises(TypeError, match="unsupported format string"):
        format(torch.ones(2), ".3g")
    assert format(ak.ones(2), "") == str(ak.ones(2))


# ---------------------------------------------------------------------- view(dtype)

VIEWS = [
    ("float32", "int32", (2, 4)), ("float32", "int16", (2, 4)), ("float32", "float64", (2, 4)),
    ("float64", "int8", (3,)), ("int64", "float64", (2, 2)), ("complex64", "float32", (3,)),
    ("complex128", "float64", (2, 2)), ("int16", "float32", (2, 4)), ("uint8", "bool", (4,)),
    ("float64", float, (3,)), ("int64", int, (3,)), ("complex128", complex, (2,)),
]


@pytest.mark.parametrize("src,dst,shape", VIEWS, ids=[f"{s}-{getattr(d, '__name__', d)}" for s, d, _ in VIEWS])
def test_view_dtype_like_pytorch(src, dst, shape):
    base = (np.arange(int(np.prod(shape))) % 2).reshape(shape) if dst == "bool" else \
        np.linspace(-3, 5, int(np.prod(shape))).reshape(shape)
    if "complex" in src:
        base = base + 1j * base[::-1]
    ref = torch.from_numpy(np.asarray(base).astype(src))
    x = ak.asarray(np.asarray(base).astype(src), device="cpu")
    ak_dst = dst if isinstance(dst, type) else getattr(ak, dst)
    torch_dst = {float: torch.float64, int: torch.int64, complex: torch.complex128}.get(dst) \
        or getattr(torch, dst)
    got, want = x.view(ak_dst), ref.view(torch_dst)
    assert got.shape == tuple(want.shape) and str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    got[...] = got[..., :1]  # a write through the view shows in the base, as in PyTorch
    want[...] = want[..., :1].clone()
    np.testing.assert_array_equal(x.numpy(), ref.numpy())


@pytest.mark.parametrize("make,dst", [
    (lambda m: m.zeros((2, 3)), "float64"),  # last size not divisible
    (lambda m: m.zeros((4, 4)).T, "int16"),  # last stride not 1
    (lambda m: m.zeros(()), "int16"),  # 0-d with another item size
    (lambda m: m.zeros((2, 4))[:, 1:3], "float64"),  # offset not divisible
])
def test_view_dtype_errors_like_pytorch(make, dst):
    with pytest.raises(RuntimeError) as want:
        make(torch).view(getattr(torch, dst))
    with pytest.raises(RuntimeError) as got:
        make(ak).view(getattr(ak, dst))
    assert str(want.value).split(" to view")[0] == str(got.value).split(" to view")[0]


def test_view_shape_still_works():
    x = ak.arange(6)
    assert x.view(2, 3).shape == (2, 3) and x.view((3, 2)).shape == (3, 2) and x.view(-1).shape == (6,)


# ---------------------------------------------------------------------- pickle, deepcopy


@pytest.mark.parametrize("clone", ["deepcopy", "pickle"])
def test_copies_keep_values_layout_and_aliasing(clone):
    do = copy.deepcopy if clone == "deepcopy" else (lambda o: pickle.loads(pickle.dumps(o)))
    base = ak.arange(12.0, device="cpu").reshape(3, 4)
    view = base.T[1:, ::2]
    tb = torch.arange(12.0).reshape(3, 4)
    tv = tb.T[1:, ::2]
    b2, v2 = do([base, view])
    tb2, tv2 = copy.deepcopy([tb, tv])  # PyTorch's pickle loses aliasing; its deepcopy keeps it
    assert v2.stride() == tuple(tv2.stride()) and v2.storage_offset() == tv2.storage_offset()
    np.testing.assert_array_equal(v2.numpy(), tv2.numpy())
    v2[0, 0] = -1  # the copies alias each other, not the originals
    tv2[0, 0] = -1
    np.testing.assert_array_equal(b2.numpy(), tb2.numpy())
    np.testing.assert_array_equal(base.numpy(), np.arange(12.0).reshape(3, 4))


@pytest.mark.parametrize("dtype", ["int8", "bool", "float64", "complex64", "bfloat16"])
def test_pickle_dtypes(dtype):
    x = ak.asarray([1, 0, 3], dtype=getattr(ak, dtype))
    y = pickle.loads(pickle.dumps(x))
    assert y.dtype is x.dtype and y.device == x.device
    np.testing.assert_array_equal(y.numpy().astype(np.complex64), x.numpy().astype(np.complex64))


def test_parameters_and_requires_grad_survive():
    p = ak.nn.Parameter(ak.ones(2))
    q = pickle.loads(pickle.dumps(p))
    tq = pickle.loads(pickle.dumps(torch.nn.Parameter(torch.ones(2))))
    assert isinstance(q, ak.nn.Parameter) and q.requires_grad == tq.requires_grad is True
    frozen = copy.deepcopy(ak.nn.Parameter(ak.ones(2), requires_grad=False))
    assert isinstance(frozen, ak.nn.Parameter) and not frozen.requires_grad
    leaf = copy.deepcopy(ak.ones(2, requires_grad=True))
    assert leaf.requires_grad and not isinstance(leaf, ak.nn.Parameter)
    (leaf * 3).sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [3, 3])
    model = copy.deepcopy(ak.nn.Linear(3, 2))
    assert all(isinstance(w, ak.nn.Parameter) and w.requires_grad for w in model.parameters())
    with pytest.raises(RuntimeError, match="leaves"):
        copy.deepcopy(p * 2)
    with pytest.raises(RuntimeError):
        copy.deepcopy(torch.nn.Parameter(torch.ones(2)) * 2)


def test_storage_del_after_failed_construction():
    """A storage whose construction stopped half-way (an unpickling that failed) is
    released without ``AttributeError: _counted``."""
    seen = []
    previous = sys.unraisablehook
    sys.unraisablehook = seen.append
    try:
        half = Storage.__new__(Storage)
        del half
        gc.collect()
    finally:
        sys.unraisablehook = previous
    assert not seen


# ---------------------------------------------------------------------- float functions of ints, bool add


@pytest.mark.parametrize("fn", ["exp", "log", "sqrt", "sin", "tanh", "log1p", "expm1", "atan"])
@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "bool"])
def test_float_functions_of_integers_like_pytorch(fn, dtype):
    values = np.array([0, 1, 2, 5]) if dtype != "bool" else np.array([True, False, True, True])
    got = getattr(ak, fn)(ak.asarray(values.astype(dtype)))
    want = getattr(torch, fn)(torch.from_numpy(values.astype(dtype)))
    assert got.dtype is ak.float32 and want.dtype == torch.float32
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-6)


def test_bool_add_and_multiply_like_pytorch():
    a, b = np.array([True, False, True, False]), np.array([True, True, False, False])
    for op in ("add", "multiply"):
        got = getattr(ak, op)(ak.asarray(a), ak.asarray(b))
        want = getattr(torch, op if op == "add" else "mul")(torch.from_numpy(a), torch.from_numpy(b))
        assert got.dtype is ak.bool and want.dtype == torch.bool
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        np.testing.assert_array_equal(got.numpy(), getattr(np, op)(a, b))
    with pytest.raises(TypeError):
        ak.subtract(ak.asarray(a), ak.asarray(b))  # as PyTorch and NumPy refuse


# ---------------------------------------------------------------------- NaN in min/max, overflow


@pytest.mark.parametrize("n", [4095, 4096, 10000])
@pytest.mark.parametrize("where", ["middle", -1])
def test_min_max_propagate_nan_at_every_size(n, where):
    rng = np.random.default_rng(n)
    a = rng.standard_normal((2, n)).astype(np.float32)
    a[1, n // 2 if where == "middle" else where] = np.nan
    x = ak.asarray(a)
    for fn in ("max", "min"):
        f = getattr(ak, fn)
        assert np.isnan(f(x).item())
        np.testing.assert_array_equal(f(x, axis=1).numpy(), getattr(np, fn)(a, axis=1))
        np.testing.assert_array_equal(f(x.T, axis=0).numpy(), getattr(np, fn)(a, axis=1))
        np.testing.assert_array_equal(ak.jit(lambda t: f(t, axis=1))(x).numpy(), getattr(np, fn)(a, axis=1))
        assert np.isnan(getattr(torch, fn)(torch.from_numpy(a)).item())
    np.testing.assert_array_equal(ak.argmax(x, axis=1).numpy(), np.argmax(a, axis=1))
    np.testing.assert_array_equal(ak.argmin(x, axis=1).numpy(), np.argmin(a, axis=1))


def test_max_without_nan_is_unchanged():
    a = np.random.default_rng(0).standard_normal(5000).astype(np.float32)
    assert ak.max(ak.asarray(a)).item() == a.max() and ak.min(ak.asarray(a)).item() == a.min()


def test_float32_overflow_is_quiet_inf_like_pytorch():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ak.asarray(1.8e308, dtype=ak.float32).item() == np.inf
        assert ak.asarray([-1.8e308], dtype=ak.float32).numpy()[0] == -np.inf
        np.testing.assert_array_equal((ak.zeros(2) + 1e300).numpy(), (torch.zeros(2) + 1e300).numpy())
        y = ak.zeros(2)
        y[0] = 1e300
        assert y[0].item() == np.inf
        assert ak.asarray(1e300j, dtype=ak.complex64).item().imag == np.inf


# ---------------------------------------------------------------------- issue 36: SciPy's failures


@pytest.mark.parametrize("divisor", ["python", "0-d", "row", "column"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_division_by_a_broadcast_divisor_is_correctly_rounded(divisor, dtype):
    """XLA turns ``a / broadcast(b)`` into ``a * (1 / b)`` (two roundings): ``x / 6``
    differed from NumPy's and PyTorch's in the last bit (SciPy's cumulative_simpson).
    A CPU test: on a GPU (H200, jax 0.11.2) float32 quotients still differ in the last
    bit from PyTorch's CPU results."""
    rng = np.random.default_rng(0)
    a = rng.random((5, 6, 7)).astype(dtype)
    b = {"python": 6.0, "0-d": np.asarray(6.0, dtype), "row": rng.random(7).astype(dtype) + 1,
         "column": rng.random((5, 1, 1)).astype(dtype) + 1}[divisor]
    x = ak.asarray(a, device="cpu")
    y = b if divisor == "python" else ak.asarray(b, device="cpu")
    expected = (torch.from_numpy(a) / (b if divisor == "python" else torch.from_numpy(b))).numpy()
    np.testing.assert_array_equal(expected, a / b)
    np.testing.assert_array_equal((x / y).numpy(), expected)
    z = ak.asarray(a, device="cpu")
    z /= y
    np.testing.assert_array_equal(z.numpy(), expected)


def test_where_of_two_python_scalars_like_pytorch():
    """SciPy's nsum calls ``xp.where(x == 0, 0.5, 1)``; the dtype is PyTorch's."""
    c, tc = ak.asarray([True, False, True]), torch.tensor([True, False, True])
    for x1, x2 in [(0.5, 1), (1, 2), (True, 2), (True, False), (1j, 2), (2, 0.5)]:
        got, want = ak.where(c, x1, x2), torch.where(tc, x1, x2)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        assert got.tolist() == want.tolist()
    with pytest.raises(TypeError, match="expects an arraykit Tensor"):
        ak.where(True, 0.5, 1)


def test_real_and_imag_attributes_like_pytorch():
    """``x.real`` of a real tensor is ``x`` (SciPy's RBFInterpolator); of a complex CPU
    tensor a view that writes through, as PyTorch's; ``x.imag`` of a real one raises."""
    t, tt = ak.ones(3, device="cpu"), torch.ones(3)
    assert t.real is t and tt.real is tt
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        t.imag
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        tt.imag
    z = np.array([[1 + 2j, 3 - 4j], [5 + 6j, -7 - 8j]])
    c, tc = ak.asarray(z, device="cpu"), torch.from_numpy(z.copy())
    for x in (c, tc):
        np.testing.assert_array_equal(x.real.numpy(), z.real)
        np.testing.assert_array_equal(x.T.imag.numpy(), z.T.imag)
        x.real[0, 1] = 10.0
        x.T.imag[0, 1] *= 2
    np.testing.assert_array_equal(c.numpy(), tc.numpy())
    assert c.numpy()[0, 1] == 10 - 4j and c.numpy()[1, 0] == 5 + 12j


def test_real_of_a_complex_tensor_that_requires_grad_is_differentiable():
    """Under autograd ``x.real`` is a new tensor in the graph (not a view through NumPy)."""
    z = ak.asarray([1 + 2j, 3 - 1j], dtype=ak.complex128, requires_grad=True)
    zt = torch.tensor([1 + 2j, 3 - 1j], dtype=torch.complex128, requires_grad=True)
    for x in (z, zt):
        (x.real * 2).sum().backward()
    np.testing.assert_array_equal(z.grad.numpy(), zt.grad.numpy())


def test_solve_of_a_singular_matrix_raises_like_pytorch():
    """SciPy's RBFInterpolator relies on ``solve`` raising for a singular system."""
    from tests.device_checks import raises_checked

    a = [[2.0, 0.0, 1.0], [1.0, 0.0, 1.0], [0.0, 0.0, 1.0]]  # a zero column
    with pytest.raises(torch.linalg.LinAlgError):
        torch.linalg.solve(torch.tensor(a), torch.ones(3))
    for catch in (ak.linalg.LinAlgError, np.linalg.LinAlgError, RuntimeError):
        with raises_checked(catch, match="singular"):
            ak.linalg.solve(ak.asarray(a), ak.ones(3))
    batch = ak.stack([ak.eye(3), ak.asarray(a)])
    with raises_checked(ak.linalg.LinAlgError, match="singular"):
        ak.linalg.solve(batch, ak.ones((2, 3, 1)))
    ok = ak.linalg.solve(ak.asarray([[2.0, 1.0], [1.0, 3.0]]), ak.asarray([1.0, 2.0]))
    np.testing.assert_allclose(ok.numpy(), np.linalg.solve([[2.0, 1.0], [1.0, 3.0]], [1.0, 2.0]),
                               rtol=1e-6)


@pytest.mark.parametrize("exponent", [2, 3, 5, -1, -2, -3, 99, 0, 0.5, 2.5, 1j])
def test_complex_integer_powers_by_repeated_multiplication(exponent):
    """``(b j) ** 2`` is exactly real (SciPy's cheby2/ellip band-stop zeros): integer
    powers of complex values multiply, as NumPy and PyTorch do, not ``exp(n log z)``."""
    z = np.array([0.2 + 0j, 0.7j, -3.3j, 0.5 + 0.5j, 1e-3j, 1.5 - 2j, 2097.75j])
    got = (ak.asarray(z) ** exponent).numpy()
    want = z ** exponent
    if isinstance(exponent, int) and abs(exponent) <= 5:
        np.testing.assert_array_equal(got, want)
    elif isinstance(exponent, int):  # NumPy's order of products, up to the last bit
        np.testing.assert_allclose(got, want, rtol=1e-15)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-13)
    if exponent in (2, 3, -1):
        np.testing.assert_array_equal(got, (torch.from_numpy(z) ** exponent).numpy())


def test_complex_integer_power_gradient_is_finite():
    """Squares that the exponent does not need are not taken (1e200 ** 64 would
    overflow in a discarded branch and make the gradient NaN)."""
    z = ak.asarray([1e200 + 0j, 0.5 + 0.5j], dtype=ak.complex128, requires_grad=True)
    zt = torch.tensor([1e200 + 0j, 0.5 + 0.5j], dtype=torch.complex128, requires_grad=True)
    for x in (z, zt):
        (x ** 1).real.sum().backward()
    np.testing.assert_array_equal(z.grad.numpy(), zt.grad.numpy())


def test_asarray_of_an_unsupported_object_names_it():
    with pytest.raises(TypeError, match=r"Unsupported input for asarray\(\): 'a duck' of type str"):
        ak.asarray("a duck")
    with pytest.raises(TypeError, match="of type object"):
        ak.asarray(object())


# ---------------------------------------------------------------------- issue 36: SciPy's loops


def _kernel_calls():
    info = ak.cache_info()
    return info["hits"] + info["misses"]


def test_small_cpu_advanced_indexing_and_concat_run_no_kernel():
    """SciPy's iterative methods index with masks whose counts change every step and
    join the pieces: small CPU tensors take NumPy's host path (no kernel to compile
    per new shape); values as NumPy's."""
    rng = np.random.default_rng(0)
    a = rng.random((6, 5))
    x = ak.asarray(a, device="cpu")
    before = _kernel_calls()
    for k in range(1, 6):
        mask = a[:, 0] > k / 6
        np.testing.assert_array_equal(x[ak.asarray(mask, device="cpu")].numpy(), a[mask])
        np.testing.assert_array_equal(x[:k, [0, -1]].numpy(), a[:k, [0, -1]])
        np.testing.assert_array_equal(
            ak.concat([x[:k], x[k:]], axis=0).numpy(), np.concatenate([a[:k], a[k:]]))
    assert _kernel_calls() - before <= 10  # the masks' comparisons and transfers, no gathers


def test_small_cpu_gathers_tiles_and_reshape_copies_run_no_kernel():
    """take, take_along_axis (broadcast, negative indices), tile and a reshape that must
    copy move elements in NumPy for small CPU tensors: NumPy's values, no kernel (index
    checks made at once: deferred checks gather with a kernel)."""
    from arraykit.core import deferred_checks

    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 4, 5))
    idx = rng.integers(-5, 5, (1, 4, 2))
    x = ak.asarray(a, device="cpu")
    j = ak.asarray(idx, device="cpu")
    with deferred_checks.forced(False):
        before = _kernel_calls()
        np.testing.assert_array_equal(
            ak.take_along_axis(x, j, axis=2).numpy(),
            np.take_along_axis(a, np.broadcast_to(idx % 5, (3, 4, 2)), 2))
        np.testing.assert_array_equal(ak.take(x, j[0, :, 0], axis=2).numpy(),
                                      np.take(a, idx[0, :, 0], axis=2))
        np.testing.assert_array_equal(ak.tile(x.mT, (2, 1, 3)).numpy(),
                                      np.tile(a.transpose(0, 2, 1), (2, 1, 3)))
        np.testing.assert_array_equal(ak.reshape(x.mT, (-1,)).numpy(),
                                      a.transpose(0, 2, 1).reshape(-1))
        assert _kernel_calls() == before
        with pytest.raises(IndexError, match="index 5 is out of bounds for axis 2 with size 5"):
            ak.take_along_axis(x, ak.asarray(np.full((3, 4, 1), 5), device="cpu"), axis=2)


def test_host_data_movement_gives_way_to_a_kernel_for_a_shape_used_often():
    """The host path serves a shape's first size_buckets.EXACT_AFTER calls; a shape used
    more often gets its kernel, compiled once, with the same values."""
    from arraykit.core import deferred_checks
    from arraykit.kernels import size_buckets

    a = np.arange(24.0).reshape(4, 6)
    x = ak.asarray(a, device="cpu")
    idx = ak.asarray(np.array([5, 0, -1]), device="cpu")
    with deferred_checks.forced(False):
        before = ak.cache_info()["misses"]
        for _ in range(size_buckets.EXACT_AFTER + 3):
            np.testing.assert_array_equal(ak.take(x, idx, axis=1).numpy(), a[:, [5, 0, -1]])
        assert ak.cache_info()["misses"] - before == 1


@pytest.mark.parametrize("value", ["scalar", "tensor", "float_into_int"])
def test_small_cpu_advanced_setitem_like_numpy(value):
    a = np.arange(24).reshape(4, 6)
    x = ak.asarray(a, device="cpu")
    idx = np.array([3, 0, 2])
    if value == "scalar":
        x[ak.asarray(idx, device="cpu"), 1:3] = -5
        a[idx, 1:3] = -5
    elif value == "tensor":
        v = np.arange(6).reshape(3, 2) * 10
        x[ak.asarray(idx, device="cpu"), 1:3] = ak.asarray(v, device="cpu")
        a[idx, 1:3] = v
    else:
        v = np.array([1.7, -2.7])
        x[ak.asarray(idx[:2], device="cpu"), 0] = ak.asarray(v, device="cpu")
        t = torch.from_numpy(np.arange(24).reshape(4, 6))
        t[torch.from_numpy(idx[:2]), 0] = torch.from_numpy(v).to(torch.int64)
        a = t.numpy()
    np.testing.assert_array_equal(x.numpy(), a)


def test_host_path_keeps_the_checks_and_aliasing():
    x = ak.arange(5.0, device="cpu")
    with pytest.raises(IndexError):
        x[ak.asarray([0, 5], device="cpu")]
    with pytest.raises(IndexError):
        x[ak.asarray([True, False], device="cpu")]
    with pytest.raises(ValueError):
        x[ak.asarray([0, 1], device="cpu")] = ak.ones(3, device="cpu")
    np.testing.assert_array_equal(x.numpy(), np.arange(5.0))  # nothing half-written
    view = x[1:4]
    view[ak.asarray([0, 2], device="cpu")] = x[ak.asarray([4, 0], device="cpu")]
    np.testing.assert_array_equal(x.numpy(), [0.0, 4.0, 2.0, 0.0, 4.0])  # through the view
    got = x[ak.asarray([1, 1], device="cpu")]
    got[0] = 100.0  # a new tensor, not a view
    assert x[1].item() == 4.0


def test_advanced_indexing_under_autograd_still_differentiates():
    x = ak.asarray([1.0, 2.0, 3.0], device="cpu", requires_grad=True)
    xt = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    for t, idx in ((x, ak.asarray([2, 0, 2], device="cpu")), (xt, torch.tensor([2, 0, 2]))):
        (t[idx] * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())


def test_small_cpu_max_min_like_numpy():
    a = np.array([[1.0, np.nan, 3.0], [4.0, -0.5, 2.0]])
    x = ak.asarray(a, device="cpu")
    for fn in ("max", "min"):
        np.testing.assert_array_equal(getattr(ak, fn)(x, axis=1).numpy(), getattr(np, fn)(a, axis=1))
        np.testing.assert_array_equal(getattr(ak, fn)(x, axis=0, keepdims=True).numpy(),
                                      getattr(np, fn)(a, axis=0, keepdims=True))
    with pytest.raises(ValueError):
        ak.max(ak.zeros((0, 2), device="cpu"), axis=0)


# ------------------------------------------------------- row sums independent of the batch


@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape, batch", [((10, 12, 11, 9), 3), ((4, 5, 100, 33), 7), ((3, 40, 700), 9)])
def test_row_reductions_do_not_depend_on_the_other_axes_like_pytorch(reduction, dtype, shape, batch):
    # SciPy's bootstrap (BCa) compares a statistic of rows taken in batches of different
    # sizes bit for bit: PyTorch gives a row the same bits whatever the other axes' sizes
    # (so does NumPy); XLA's CPU reduction did not (YNNPACK's tiling in large kernels,
    # a sequential loop in small ones)
    x = np.random.default_rng(0).random(shape).astype(dtype)
    whole_ak = getattr(ak, reduction)(ak.asarray(x), axis=-1)
    whole_torch = getattr(torch, reduction)(torch.asarray(x), dim=-1)
    for k in range(0, shape[-2], batch):
        part_ak = getattr(ak, reduction)(ak.asarray(x[..., k:k + batch, :]), axis=-1)
        part_torch = getattr(torch, reduction)(torch.asarray(x[..., k:k + batch, :]), dim=-1)
        np.testing.assert_array_equal(part_torch.numpy(), whole_torch[..., k:k + batch].numpy())
        np.testing.assert_array_equal(part_ak.numpy(), whole_ak[..., k:k + batch].numpy())
    want = getattr(np, reduction)(x.astype(np.float64), axis=-1)
    np.testing.assert_allclose(whole_ak.numpy(), want, rtol=4 * np.finfo(dtype).eps)


def test_pairwise_row_sums_keep_dtype_signs_and_half_precision_accumulation():
    # float16 accumulates in float32 as NumPy's and PyTorch's sums do (2048 + 1s would
    # stop at 2048 in float16 steps); an all -0.0 row sums to +0.0 as in both
    h = np.ones((3, 1000), np.float16)
    np.testing.assert_array_equal(ak.sum(ak.asarray(h), axis=1).numpy(), np.sum(h, axis=1))
    assert ak.sum(ak.asarray(h), axis=1).dtype == ak.float16
    zeros = np.full((2, 5), -0.0)
    for axis in (0, 1, None):
        got = ak.sum(ak.asarray(zeros), axis=axis).numpy()
        want = torch.sum(torch.asarray(zeros), dim=axis).numpy() if axis is not None else np.sum(zeros)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
        assert not np.any(np.signbit(got))
    c = np.random.default_rng(1).random((4, 9)) + 1j
    np.testing.assert_allclose(ak.sum(ak.asarray(c), axis=(0, 1)).numpy(), np.sum(c), rtol=1e-15)
    np.testing.assert_allclose(ak.mean(ak.asarray(c), axis=0, keepdims=True).numpy(),
                               np.mean(c, axis=0, keepdims=True), rtol=1e-15)
