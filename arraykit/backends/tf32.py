"""The TensorFloat-32 switch shared by ``backends.cuda.matmul`` and ``backends.cudnn``."""

from __future__ import annotations

from ..core import precision


def allowed():
    """Whether float32 products may be computed below full precision."""
    return precision.get_float32_matmul_precision() != "highest"


def allow(flag):
    """``True``: TF32 products (``"high"``, unless already lower); ``False``: ``"highest"``."""
    if flag:
        if not allowed():
            precision.set_float32_matmul_precision("high")
    else:
        precision.set_float32_matmul_precision("highest")


def switch(doc):
    """An ``allow_tf32`` property (documented ``doc``) that reads and sets this switch."""
    return property(lambda self: allowed(), lambda self, flag: allow(flag), doc=doc)
