"""The import contracts of pyproject.toml ([tool.importlinter]): layers import only
the layers below them, no two modules of a package import each other in a circle,
and no layer imports the package namespace. Run through ``lint-imports`` on this
tree, and once on a copy with planted violations to show the check can fail."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
# ``lint-imports`` through this interpreter, wherever import-linter is installed (a
# virtual environment, or a folder on PYTHONPATH as on the GPU machine).
LINT_IMPORTS = "import sys; from importlinter.cli import lint_imports_command as c; sys.exit(c())"


def _lint_imports(root):
    """``lint-imports`` on the tree at ``root``: (exit status, its report)."""
    path = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, "-c", LINT_IMPORTS, "--no-cache"], cwd=root,
        env=dict(os.environ, PYTHONPATH=path), capture_output=True, text=True, timeout=300,
    )
    return done.returncode, done.stdout + done.stderr


def test_import_contracts_are_kept():
    status, report = _lint_imports(ROOT)
    assert status == 0, report
    assert "3 kept, 0 broken" in report, report


def _plant(path, text):
    with open(path, "a") as f:
        f.write(text)


def test_planted_violations_break_the_contracts(tmp_path):
    shutil.copytree(ROOT / "arraykit", tmp_path / "arraykit",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    package = tmp_path / "arraykit"
    _plant(package / "core" / "layout.py", "\n\ndef _upward():\n    from ..api import creation\n")
    _plant(package / "tensors" / "indexing_keys.py",
           "\n\ndef _circle():\n    from .tensor_type import Tensor\n")
    _plant(package / "kernels" / "strided.py", "\n\ndef _namespace():\n    import arraykit\n")
    status, report = _lint_imports(tmp_path)
    assert status != 0, report
    assert "0 kept, 3 broken" in report, report
    assert "arraykit.core.layout -> arraykit.api.creation" in report, report
    # the planted edge closes a cycle; import-linter names one edge of it, either one
    assert ("- .tensor_type -> .indexing_keys" in report
            or "- .indexing_keys -> .tensor_type" in report), report
    assert "arraykit.kernels.strided -> arraykit (" in report, report
