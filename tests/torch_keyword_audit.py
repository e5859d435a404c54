"""Which of PyTorch's keyword names arraykit's shared functions and methods lack.

For every public name of ``arraykit`` that ``torch`` also has, and every ``Tensor``
method that ``torch.Tensor`` also has, PyTorch's parameter names are collected from
``inspect.signature`` (Python-level functions), every signature line of the
docstring (one per overload of a builtin: ``sum(input, dim, keepdim=False, *,
dtype=None) -> Tensor``) and ``torch.overrides.get_testing_overrides()``; arraykit's
from ``inspect.signature``. A gap is one of :data:`KEYWORDS` that PyTorch takes and
arraykit does not. Run it as a script from the repository root to print the table:

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


if __name__ == "__main__":
    missing, unchecked = gaps()
    for name, lacking in missing.items():
        print(f"{name:32} {', '.join(lacking)}")
    print(f"\n{len(missing)} with gaps; {len(unchecked)} take **kwargs: {', '.join(unchecked)}")
