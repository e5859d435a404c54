"""Which of PyTorch's keyword names arraykit's shared functions and methods lack.

For every public name of ``arraykit`` that ``torch`` also has, and every ``Tensor``
method that ``torch.Tensor`` also has, PyTorch's parameter names are collected from
``inspect.signature`` (Python-level functions), every signature line of the
docstring (one per overload of a builtin: ``sum(input, dim, keepdim=False, *,
dtype=None) -> Tensor``) and ``torch.overrides.get_testing_overrides()``; arraykit's
from ``inspect.signature``. A gap is one of :data:`KEYWORDS` that PyTorch takes and
arraykit does not. It also compares positional forms (:func:`positional_gaps`): every positional
parameter list of PyTorch's signature lines (``stack(tensors, dim=0, *, out=None)``:
``tensors, dim``) must fit arraykit's positional parameters, so ``stack(ts, 1)`` binds.
Run it as a script from the repository root to print both tables:

    PYTHONPATH=. python tests/torch_keyword_audit.py
"""

from __future__ import annotations

import inspect
import re

import torch
import torch.overrides

import arraykit as ak

KEYWORDS = ("dim", "keepdim", "diagonal", "input", "other", "dtype", "out")

_OVERRIDES = torch.overrides.get_testing_overrides()

# Testing overrides whose parameter names PyTorch's own function refuses (checked:
# ``torch.permute(x, dim=...)`` and ``torch.diag_embed(x, diagonal=...)`` raise TypeError).
_OVERRIDE_ONLY = {"permute": {"dim"}, "diag_embed": {"diagonal"}}


def _signature_names(fn):
    try:
        return {
            p.name for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        }
    except (TypeError, ValueError):
        return set()


def _docstring_names(name, doc):
    names = set()
    for params in re.findall(rf"^\s*{re.escape(name)}\((.*)\)\s*->", doc or "", flags=re.M):
        for part in params.split(","):
            part = part.split("=")[0].split(":")[0].strip().lstrip("*")
            if part.isidentifier():
                names.add(part)
    return names


def torch_names(name, fn, method=False):
    """Every parameter name PyTorch's ``fn`` (called ``name``) takes, in any overload.

    The testing overrides describe methods by their function's signature (``out``
    included, which methods refuse), so methods use their own docstring only."""
    names = _signature_names(fn) | _docstring_names(name, getattr(fn, "__doc__", None))
    override = None if method else _OVERRIDES.get(fn)
    if override is not None:
        names |= _signature_names(override) - _OVERRIDE_ONLY.get(name, set())
    names.discard("self")
    return names


def arraykit_names(fn):
    """The keyword names arraykit's ``fn`` accepts; None when it takes ``**kwargs``."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def shared_functions():
    """``(name, torch function, arraykit function)`` of the namespace names both have."""
    pairs = []
    for name in sorted(ak.__all__):
        ours, theirs = getattr(ak, name), getattr(torch, name, None)
        if callable(ours) and callable(theirs) and not isinstance(ours, type):
            pairs.append((name, theirs, ours))
    return pairs


def shared_methods():
    """``(name, torch method, arraykit method)`` of the public methods both have."""
    pairs = []
    for name in sorted(dir(ak.Tensor)):
        if name.startswith("_"):
            continue
        ours, theirs = getattr(ak.Tensor, name), getattr(torch.Tensor, name, None)
        if callable(ours) and callable(theirs) and not isinstance(ours, property):
            pairs.append((name, theirs, ours))
    return pairs


def gaps():
    """``{"function name" or "Tensor.name": sorted missing keywords}``, and the names
    whose arraykit signature takes ``**kwargs`` (not checkable here)."""
    missing, unchecked = {}, []
    for prefix, pairs in (("", shared_functions()), ("Tensor.", shared_methods())):
        for name, theirs, ours in pairs:
            wanted = torch_names(name, theirs, method=bool(prefix)) & set(KEYWORDS)
            if prefix:
                wanted.discard("input")  # the tensor itself
            accepted = arraykit_names(ours)
            if accepted is None:
                unchecked.append(prefix + name)
                continue
            lacking = sorted(wanted - accepted)
            if lacking:
                missing[prefix + name] = lacking
    return missing, unchecked


# Positional forms PyTorch's docstrings print but PyTorch refuses (checked in
# tests/test_torch_positional.py): keyword-only there, or no CPU kernel (out_dtype).
TORCH_REFUSES_POSITIONALLY = {
    "Tensor.sum": "dtype", "Tensor.prod": "dtype", "Tensor.round": "decimals",
    "Tensor.cpu": "memory_format", "Tensor.cuda": "memory_format", "mm": "out_dtype",
    "bmm": "out_dtype", "addmm": "out_dtype", "baddbmm": "out_dtype",
    "Tensor.new_empty_strided": "dtype", "Tensor.dim_order": "ambiguity_check",
}


def torch_positional(name, fn, method=False):
    """PyTorch's positional parameter lists of ``fn``, one per signature line of its
    docstring (the ``.. function::`` lines included), or its testing override's when it
    has none and is a Python function (without ``out``); for a method, without the
    tensor itself."""
    forms = []
    pattern = rf"^\s*(?:\.\. function:: )?{re.escape(name)}\((.*)\)\s*->"
    for params in re.findall(pattern, getattr(fn, "__doc__", None) or "", flags=re.M):
        names = []
        for part in params.split(","):
            part = part.strip().lstrip("\\")  # docstrings escape the bare star: \*
            if part.startswith("*"):
                break
            part = part.split("=")[0].split(":")[0].strip()
            if part.isidentifier():
                names.append(part)
        forms.append(names)
    override = None if method else _OVERRIDES.get(fn)
    # A compiled function's testing override may be its nn.functional twin's
    # (torch.dropout's lists F.dropout's ``inplace``, which torch.dropout refuses): only
    # Python functions' overrides are read for positional forms.
    if not forms and override is not None and not inspect.isbuiltin(fn):
        params = inspect.signature(override).parameters.values()
        forms.append([p.name for p in params if p.name != "out" and p.kind in (
            p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])
    if method:
        forms = [f[1:] if f[:1] in (["input"], ["self"]) else f for f in forms]
    return forms


def arraykit_positional(fn, method=False):
    """How many positional arguments arraykit's ``fn`` binds (None: any number, or no
    signature); for a method, without ``self``."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    count = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    return count - 1 if method and params and params[0].name == "self" else count


def positional_gaps():
    """``{"name" or "Tensor.name": torch's positional parameters}`` where PyTorch binds
    more positional arguments than arraykit does (``stack(tensors, dim)`` against a
    keyword-only ``axis``), less :data:`TORCH_REFUSES_POSITIONALLY`."""
    missing = {}
    for prefix, pairs in (("", shared_functions()), ("Tensor.", shared_methods())):
        for name, theirs, ours in pairs:
            count = arraykit_positional(ours, method=bool(prefix))
            if count is None:
                continue
            for form in torch_positional(name, theirs, method=bool(prefix)):
                extra = form[count:]
                if extra and extra[0] != TORCH_REFUSES_POSITIONALLY.get(prefix + name):
                    missing[prefix + name] = form
                    break
    return missing


if __name__ == "__main__":
    missing, unchecked = gaps()
    for name, lacking in missing.items():
        print(f"{name:32} {', '.join(lacking)}")
    print(f"\n{len(missing)} with gaps; {len(unchecked)} take **kwargs: {', '.join(unchecked)}")
    positional = positional_gaps()
    for name, form in positional.items():
        print(f"{name:32} torch binds ({', '.join(form)}) positionally")
    print(f"\n{len(positional)} with positional gaps")
