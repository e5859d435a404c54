"""Write the API reference pages (``docs/api/``) from arraykit's public namespaces.

Every name in ``arraykit.__all__`` gets an entry under ``arraykit.<name>``: the
standard's names in the group the array API standard lists them under (the table
``docs/_data/array_api_names.csv``), arraykit's own names in the group of the module
that defines them. ``arraykit.linalg``, ``arraykit.fft``, ``arraykit.nn``,
``arraykit.nn.functional``, ``arraykit.optim``, ``arraykit.autograd`` and the
framework's packages (``nn.utils``, ``amp``, ``cuda``, ``distributed``, ...) get a page
each. A public name that falls in no group is a warning (an error under ``-W``),
so the reference cannot silently miss one.
"""

from __future__ import annotations

import csv
import inspect
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

# Pages of the namespace ``arraykit`` in order: (page, title, standard groups).
NAMESPACE_PAGES = [
    ("creation", "Creation functions", ["creation"]),
    ("data_types", "Data types and data type functions", ["data types", "data type functions"]),
    ("elementwise", "Element-wise functions", ["elementwise"]),
    ("indexing", "Indexing functions", ["indexing"]),
    ("inspection", "Inspection", ["inspection"]),
    ("linear_algebra", "Linear algebra functions", ["linear algebra"]),
    ("manipulation", "Manipulation functions", ["manipulation"]),
    ("searching", "Searching functions", ["searching"]),
    ("set", "Set functions", ["set"]),
    ("sorting", "Sorting functions", ["sorting"]),
    ("statistical", "Statistical functions", ["statistical"]),
    ("utility", "Utility functions", ["utility"]),
    ("constants", "Constants", ["constants"]),
    ("tensor", "Tensors, devices and memory", []),
    ("autograd", "Autograd", []),
    ("jit", "arraykit.jit", []),
    ("precision", "Precision and autocast", []),
    ("random", "Random numbers", []),
    ("checkpoints", "Checkpoints", []),
    ("torch_functions", "PyTorch's functions of torch.nn.functional in the namespace", []),
]

# arraykit's own names go to the page of the module that defines them (last part of
# ``__module__``, so the mapping survives moving modules between subpackages).
MODULE_PAGES = {
    "creation": "creation", "data_types": "data_types", "dtype_functions": "data_types",
    "dtypes": "data_types", "matrix_products": "linear_algebra", "memory_sharing": "tensor",
    "elementwise": "elementwise", "indexing": "indexing", "gather_scatter": "indexing",
    "info": "inspection", "linear_algebra": "linear_algebra", "manipulation": "manipulation",
    "searching": "searching", "set_functions": "set", "sorting": "sorting",
    "statistical": "statistical", "utility": "utility", "constants": "constants",
    "tensor_type": "tensor", "memory": "tensor", "device_memory": "tensor", "devices": "tensor",
    "launch": "tensor", "functional": "autograd", "mode": "autograd", "jit": "jit",
    "precision": "precision", "autocasting": "precision", "compilation_cache": "jit",
    "random": "random", "serialization": "checkpoints",
    # PyTorch's names beside the standard's, by family
    "torch_shapes": "manipulation", "torch_products": "linear_algebra",
    "torch_reductions": "statistical", "torch_pointwise": "elementwise",
    "torch_creation": "creation", "torch_indexing": "indexing", "versions": "inspection",
    "compiler": "jit", "size": "tensor", "activation": "torch_functions",
    "torch_more_pointwise": "elementwise", "torch_inplace_functions": "elementwise",
    "torch_more_products": "linear_algebra", "torch_more_shapes": "manipulation",
    "torch_more_creation": "creation",
    "torch_method_functions": "tensor", "torch_functions": "torch_functions",
    "conv": "torch_functions", "pooling": "torch_functions", "dense": "torch_functions",
    "pixelshuffle": "torch_functions", "distance": "torch_functions",
    "normalization": "torch_functions",
}

# Names that are values, not functions or classes (no docstring of their own).
VALUES = {
    "e": "Euler's number, 2.718281828459045.",
    "inf": "Positive infinity (IEEE 754).",
    "nan": "Not a number (IEEE 754).",
    "pi": "The ratio of a circle's circumference to its diameter, 3.141592653589793.",
    "newaxis": "``None``: an index that inserts an axis of size 1 (``x[:, newaxis]``).",
    "channels_last": "Memory format of 4-D tensors stored NHWC (``x.contiguous(memory_format=...)``).",
    "channels_last_3d": "Memory format of 5-D tensors stored NDHWC.",
    "contiguous_format": "Memory format of C-contiguous tensors (the default).",
    "preserve_format": "Memory format that keeps the operand's own format (``clone``, ``*_like``).",
}

SUBNAMESPACES = [
    ("linalg", "arraykit.linalg", "The ``linalg`` extension of the array API standard."),
    ("fft", "arraykit.fft", "The ``fft`` extension of the array API standard."),
    ("nn", "arraykit.nn", "Modules, parameters and losses."),
    ("nn_functional", "arraykit.nn.functional", "Functional forms of the layers and losses."),
    ("nn_init", "arraykit.nn.init", "Parameter initialisation."),
    ("optim", "arraykit.optim", "Optimizers."),
    ("lr_scheduler", "arraykit.optim.lr_scheduler", "Learning-rate schedulers."),
    ("autograd_namespace", "arraykit.autograd", "The autograd namespace (PyTorch's spelling)."),
    ("nn_utils", "arraykit.nn.utils", "Gradient clipping, parameter vectors."),
    ("nn_utils_rnn", "arraykit.nn.utils.rnn", "Variable-length sequences."),
    ("nn_parallel", "arraykit.nn.parallel", "Data parallelism across processes."),
    ("amp", "arraykit.amp", "Mixed precision: autocast and gradient scaling."),
    ("cuda", "arraykit.cuda", "PyTorch's ``torch.cuda`` queries over JAX's GPU devices."),
    ("backends", "arraykit.backends", "PyTorch's ``torch.backends`` flags."),
    ("distributed", "arraykit.distributed", "Process groups, collectives and global tensors."),
    ("utils_data", "arraykit.utils.data", "Datasets, samplers and the DataLoader."),
    ("einops", "arraykit.einops", "einops on tensors: the backend einops finds (needs einops)."),
    ("einops_layers", "arraykit.einops.layers",
     "einops' layers as modules, the counterparts of ``einops.layers.torch``'s (needs einops)."),
]


def standard_groups(path):
    """``{name: group}`` for the namespace names of the standard's table."""
    with open(path, newline="") as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        return {r["name"]: r["group"] for r in rows if "." not in r["name"]}


def _directive(qualname, obj):
    if inspect.isclass(obj):
        return f".. autoclass:: {qualname}\n   :members:\n"
    if callable(obj):
        return f".. autofunction:: {qualname}\n"
    return f".. autodata:: {qualname}\n   :no-value:\n"


def _entries(prefix, names, namespace):
    """An autosummary table of ``names`` and an autodoc entry for each."""
    summary = [f"   {n}" for n in names if not (prefix == "arraykit" and n in VALUES)]
    lines = [".. autosummary::", "   :nosignatures:", "", *summary, ""] if summary else []
    for n in names:
        if prefix == "arraykit" and n in VALUES:
            lines += [f".. data:: {n}", "", f"   {VALUES[n]}", ""]
        else:
            lines += [_directive(f"{prefix}.{n}", getattr(namespace, n))]
    return lines


def _aliases(prefix, aliases, namespace):
    """Targets for names documented on another page (``{name: documented qualname}``),
    so that ``prefix.<name>`` resolves in cross-references, and a sentence linking each
    to its entry."""
    lines = []
    for n in aliases:
        kind = "class" if inspect.isclass(getattr(namespace, n)) else "function"
        lines += [f".. py:{kind}:: {n}", f"   :module: {prefix}", "   :no-typesetting:",
                  "   :no-index-entry:", ""]
    refs = ", ".join(
        f":py:obj:`{n} <{target}>`" if target.rsplit(".", 1)[-1] == n
        else f"``{n}`` (:py:obj:`{target}`)"
        for n, target in aliases.items()
    )
    return [*lines, f"Also here, documented on another page: {refs}.", ""]


def _page(title, body):
    return "\n".join([title, "=" * len(title), "", *body, ""])


def _namespace_pages(ak, table):
    pages = {page: ([], []) for page, _, _ in NAMESPACE_PAGES}
    group_page = {g: page for page, _, groups in NAMESPACE_PAGES for g in groups}
    for name in ak.__all__:
        obj = getattr(ak, name)
        if inspect.ismodule(obj):
            continue
        if name in table:
            pages[group_page[table[name]]][0].append(name)
            continue
        module = (getattr(obj, "__module__", None) or "").rsplit(".", 1)[-1]
        page = MODULE_PAGES.get(module) or ("constants" if name in VALUES else None)
        if page is None:
            logger.warning("arraykit.%s (module %r) belongs to no API reference page", name, module)
            continue
        pages[page][1].append(name)
    out = {}
    for page, title, _ in NAMESPACE_PAGES:
        standard, own = pages[page]
        if not standard and not own:
            continue
        body = [".. currentmodule:: arraykit", ""]
        if standard:
            body += ["In the array API standard", "-" * 25, "", *_entries("arraykit", standard, ak)]
        if own:
            body += ["arraykit's own", "-" * 14, "", *_entries("arraykit", own, ak)]
        out[page] = _page(title, body)
    return out


def _documented_elsewhere(ak, namespace, name, documented):
    """Where ``namespace.<name>`` is already documented: ``arraykit.<name>`` when the
    namespace holds the same object under that name, the qualname of an earlier entry
    for the same class or function (``documented``: ``{id: qualname}``), else None."""
    obj = getattr(namespace, name)
    if name in ak.__all__ and getattr(ak, name) is obj:
        return f"arraykit.{name}"
    return documented.get(id(obj)) if callable(obj) else None


def _subnamespace_page(ak, qualname, blurb, documented):
    """The page of ``qualname``; each class or function is documented once, on the
    first page that lists it (``documented`` records them), and linked from the rest."""
    namespace = ak
    for part in qualname.split(".")[1:]:
        namespace = getattr(namespace, part)
    names = [n for n in namespace.__all__ if not inspect.ismodule(getattr(namespace, n))]
    aliases = {}
    for n in names:
        target = _documented_elsewhere(ak, namespace, n, documented)
        if target is not None:
            aliases[n] = target
        elif callable(getattr(namespace, n)):
            documented[id(getattr(namespace, n))] = f"{qualname}.{n}"
    own = [n for n in names if n not in aliases]
    body = [f".. module:: {qualname}", "", blurb, "", *_entries(qualname, own, namespace)]
    if aliases:
        body += _aliases(qualname, aliases, namespace)
    return _page(qualname, body)


def _index(pages):
    body = [
        "Every public name, generated from its docstring. The namespace ``arraykit`` is",
        "grouped as the array API standard groups its functions.",
        "",
        ".. toctree::",
        "   :maxdepth: 1",
        "",
        *[f"   {p}" for p in pages],
    ]
    return _page("API reference", body)


def _write(path, text):
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def write_pages(app):
    import arraykit as ak

    out_dir = Path(app.srcdir) / "api"
    out_dir.mkdir(exist_ok=True)
    table = standard_groups(Path(app.srcdir) / "_data" / "array_api_names.csv")
    pages = _namespace_pages(ak, table)
    # the namespace's own entries first; the first name in __all__ wins
    documented = {id(getattr(ak, n)): f"arraykit.{n}" for n in reversed(ak.__all__)
                  if callable(getattr(ak, n))}
    for page, qualname, blurb in SUBNAMESPACES:
        pages[page] = _subnamespace_page(ak, qualname, blurb, documented)
    for page, text in pages.items():
        _write(out_dir / f"{page}.rst", text)
    _write(out_dir / "index.rst", _index(pages))


def setup(app):
    app.connect("builder-inited", write_pages, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
