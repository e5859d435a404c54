"""The examples run as the README says and reach what they promise."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _run(script, *args):
    done = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True,
                          text=True, timeout=600, cwd=EXAMPLES)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.parametrize("mode", [[], ["--eager"]], ids=["jit", "eager"])
def test_train_digits_learns(mode):
    out = _run("train_digits.py", "--epochs", "12", *mode)
    accuracy = float(re.search(r"test accuracy ([0-9.]+)", out).group(1))
    assert accuracy >= 0.93, out
    if not mode:
        assert "jit (2 compilations)" in out


def test_resume_continues_with_the_same_losses(tmp_path):
    out = _run("resume_digits.py", "--epochs", "2", "--checkpoint", str(tmp_path / "ckpt"))
    assert "identical losses: True" in out, out
