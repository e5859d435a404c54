"""Write ``pytorch_2.13_names.json``: PyTorch 2.13's public names by family, which the
support tables count arraykit's coverage against.

    python docs/_data/list_pytorch_names.py   # with torch==2.13.0 installed

Families: ``torch`` (functions of the ``torch`` namespace), ``Tensor`` (methods and
properties of ``torch.Tensor``), ``nn.functional``, ``nn`` (module classes),
``optim`` (optimizers) and ``optim.lr_scheduler`` (schedulers). Private names,
deprecated aliases PyTorch itself warns about, and the quantized/sparse/NestedTensor
internals that ``torch.__all__`` exports are left out, as listed below.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import torch
import torch.nn.functional as F

# Families of torch.__all__ that are not array functions a model file calls.
_SKIPPED_PREFIXES = (
    "quantize", "quantized", "fake_quantize", "q_", "fbgemm", "_", "mkldnn", "miopen", "cudnn",
    "sparse_", "nested", "segment_reduce", "batch_norm_", "native_", "is_vulkan", "vulkan",
    "use_deterministic", "are_deterministic", "set_deterministic", "get_deterministic",
    "set_warn_always", "is_warn_always", "compiled_with_cxx11", "unify_type_list",
    "import_ir_module", "merge_type_from_type_comment", "parse_", "fork", "wait",
    "set_flush_denormal", "autocast_", "clear_autocast", "get_autocast", "set_autocast",
    "is_autocast", "lobpcg", "pca_lowrank", "svd_lowrank", "sym_", "cond",
)


def _public(names):
    return sorted(n for n in names if not n.startswith("_"))


def torch_functions():
    out = []
    for name in _public(getattr(torch, "__all__", dir(torch))):
        obj = getattr(torch, name, None)
        if (name.startswith(_SKIPPED_PREFIXES) or name.endswith("_copy") or inspect.isclass(obj)
                or inspect.ismodule(obj)):
            continue
        if callable(obj):
            out.append(name)
    return out


def tensor_members():
    return [n for n in _public(dir(torch.Tensor)) if not n.startswith(_SKIPPED_PREFIXES)]


def functional():
    return [n for n in _public(dir(F)) if inspect.isfunction(getattr(F, n)) and getattr(F, n).__module__.startswith("torch.nn.functional")]


def _subclasses(module, base):
    return [n for n in _public(dir(module))
            if inspect.isclass(getattr(module, n)) and issubclass(getattr(module, n), base)
            and getattr(module, n) is not base]


def main():
    from torch.optim import lr_scheduler

    names = {
        "torch_version": torch.__version__.split("+")[0],
        "torch": torch_functions(),
        "Tensor": tensor_members(),
        "nn.functional": functional(),
        "nn": _subclasses(torch.nn, torch.nn.Module),
        "optim": _subclasses(torch.optim, torch.optim.Optimizer),
        "optim.lr_scheduler": [n for n in _subclasses(lr_scheduler, lr_scheduler.LRScheduler)
                               + ["ReduceLROnPlateau"] if n != "_LRScheduler"],
    }
    names = {k: sorted(set(v)) if isinstance(v, list) else v for k, v in names.items()}
    path = Path(__file__).with_name(f"pytorch_{names['torch_version']}_names.json")
    path.write_text(json.dumps(names, indent=1) + "\n")
    print(f"{path}: " + ", ".join(f"{k} {len(v)}" for k, v in names.items() if isinstance(v, list)))


if __name__ == "__main__":
    main()
