"""Every public name has a docstring: the API reference is generated from them.

Public names: ``arraykit.__all__``, the subnamespaces ``linalg``, ``fft``, ``nn``,
``nn.functional``, ``nn.init``, ``optim``, ``optim.lr_scheduler`` and ``autograd``
(their ``__all__``), the public methods and properties of ``Tensor``, and the public
methods and properties that the classes among them define.
"""

from __future__ import annotations

import inspect

import pytest

import arraykit as ak

SUBNAMESPACES = {
    "arraykit.linalg": ak.linalg,
    "arraykit.fft": ak.fft,
    "arraykit.nn": ak.nn,
    "arraykit.nn.functional": ak.nn.functional,
    "arraykit.nn.init": ak.nn.init,
    "arraykit.optim": ak.optim,
    "arraykit.optim.lr_scheduler": ak.optim.lr_scheduler,
    "arraykit.autograd": ak.autograd,
}
# Plain values (constants, memory formats, newaxis) cannot carry a docstring of their own.
VALUE_TYPES = (bool, int, float, complex, str, type(None))


def _doc(obj):
    """The docstring a reader of ``obj`` gets, or "" (properties, static and class
    methods are read through to their functions)."""
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if isinstance(obj, property):
        return (obj.__doc__ or obj.fget.__doc__ or "").strip()
    return (getattr(obj, "__doc__", None) or "").strip()


def _class_members(qualname, cls):
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        if callable(member) or isinstance(member, (property, staticmethod, classmethod)):
            yield f"{qualname}.{name}", member


def public_names():
    """(qualified name, object) for every public name the reference documents."""
    names = [(f"arraykit.{n}", getattr(ak, n)) for n in ak.__all__]
    for prefix, namespace in SUBNAMESPACES.items():
        names += [(f"{prefix}.{n}", getattr(namespace, n)) for n in namespace.__all__]
    for name in dir(ak.Tensor):
        if not name.startswith("_"):
            names.append((f"arraykit.Tensor.{name}", inspect.getattr_static(ak.Tensor, name)))
    for qualname, obj in list(names):
        if inspect.isclass(obj) and obj is not ak.Tensor:
            names += list(_class_members(qualname, obj))
    return [(q, o) for q, o in names if not isinstance(o, VALUE_TYPES)]


PUBLIC = public_names()


def test_public_names_are_found():
    found = {q for q, _ in PUBLIC}
    for expected in ("arraykit.sum", "arraykit.linalg.svd", "arraykit.fft.rfft",
                     "arraykit.nn.Linear", "arraykit.nn.Linear.forward",
                     "arraykit.nn.functional.cross_entropy", "arraykit.optim.Optimizer.step",
                     "arraykit.autograd.Function", "arraykit.Tensor.view",
                     "arraykit.Tensor.shape", "arraykit.jit", "arraykit.save"):
        assert expected in found, expected
    assert len(PUBLIC) > 600


def test_every_public_name_has_a_docstring():
    missing = sorted(q for q, obj in PUBLIC if not _doc(obj))
    assert not missing, f"{len(missing)} public names without a docstring: {missing}"


@pytest.mark.parametrize("name", ["e", "newaxis", "channels_last"])
def test_values_are_documented_on_the_reference_page(name):
    """Plain values have no docstring; the reference page generator describes them."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "docs" / "_ext" / "api_pages.py"
    spec = importlib.util.spec_from_file_location("api_pages", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError:
        pytest.skip("sphinx is not installed")
    assert module.VALUES[name]
