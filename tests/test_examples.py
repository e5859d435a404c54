"""The examples run as the README says and reach what they promise."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _run(script, *args):
    # the examples import the arraykit of this checkout, whatever the environment installed
    path = os.pathsep.join(filter(None, [str(EXAMPLES.parent), os.environ.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True,
                          text=True, timeout=600, cwd=EXAMPLES, env={**os.environ, "PYTHONPATH": path})
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.parametrize("mode", [[], ["--eager"]], ids=["jit", "eager"])
def test_train_digits_learns(mode):
    out = _run("train_digits.py", "--epochs", "12", *mode)
    accuracy = float(re.search(r"test accuracy ([0-9.]+)", out).group(1))
    assert accuracy >= 0.93, out
    if not mode:
        assert "jit (1 XLA compilation(s))" in out


@pytest.fixture(scope="module")
def cnn_jit_output():
    """The ResNet example, jitted, at width 8 for 2 epochs (run once for this module)."""
    return _run("train_cnn.py", "--epochs", "2", "--width", "8")


def _cnn_losses(out):
    return [float(v) for v in re.findall(r"mean loss ([0-9.]+)", out)]


def test_train_cnn_learns_at_a_tiny_size(cnn_jit_output):
    """The ResNet example (BatchNorm, in-place ReLU, pooling), jitted, at width 8."""
    out = cnn_jit_output
    losses = _cnn_losses(out)
    assert len(losses) == 2 and losses[1] < losses[0] < 2.5, out
    assert "jit (1 XLA compilation(s))" in out
    assert float(re.search(r"test accuracy ([0-9.]+)", out).group(1)) > 0.5, out


@pytest.mark.slow
def test_train_cnn_eager_runs_the_same_loop(cnn_jit_output):
    """``--eager`` runs the same steps without ``arraykit.jit``: the first epoch's mean
    loss is the jitted run's (the run is deterministic)."""
    out = _run("train_cnn.py", "--epochs", "1", "--width", "8", "--eager")
    assert "eager: 22 steps" in out, out
    np.testing.assert_allclose(_cnn_losses(out), _cnn_losses(cnn_jit_output)[:1], rtol=1e-3)


def test_optax_digits_learns():
    """The digits MLP as a JAX pytree, updated by optax inside ``jax.jit``."""
    out = _run("optax_digits.py", "--epochs", "3")
    loss = float(re.search(r"epoch 3: loss ([0-9.]+)", out).group(1))
    accuracy = float(re.search(r"test accuracy ([0-9.]+)", out).group(1))
    assert loss < 0.6 and accuracy >= 0.88, out


def test_strided_tour_holds_every_claim():
    """The tour checks each claim it prints and exits with an error at the first false
    one; section 8 says what PyTorch does: ``t.numpy()`` and ``np.asarray(t)`` share a
    CPU tensor's memory (writes on either side seen by the other)."""
    out = _run("strided_tour.py")
    assert "[FAILED]" not in out and out.rstrip().endswith("Tour finished."), out[-3000:]
    for section in range(1, 12):
        assert f"\n{section}. " in out, f"section {section} missing"
    claims = re.findall(r"\[ok\] (.*)", out)
    assert len(claims) >= 39, claims
    assert "a later write through the tensor is seen by the NumPy array" in claims
    assert "a write through the NumPy array is seen by the tensor" in claims


def test_resume_continues_with_the_same_losses(tmp_path):
    out = _run("resume_digits.py", "--epochs", "2", "--checkpoint", str(tmp_path / "ckpt"))
    assert "identical losses: True" in out, out


def _gpt_losses(path):
    return [json.loads(line)["loss"] for line in path.read_text().splitlines()]


def test_train_gpt_tiny_learns(tmp_path):
    log = tmp_path / "losses.jsonl"
    out = _run("train_gpt.py", "--preset", "tiny", "--steps", "20", "--log", str(log))
    losses = _gpt_losses(log)
    assert len(losses) == 20
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 0.5, losses  # from ~5.5 nats
    assert "unigram baseline" in out and "final validation" in out, out
    # the learning rate changes every step (warm-up, cosine) without recompiling
    assert "after 20 steps; 1 XLA compilation(s) of the training step" in out, out


@pytest.mark.slow
def test_train_gpt_resume_gives_the_same_losses(tmp_path):
    whole, first, rest = (tmp_path / f"{name}.jsonl" for name in ("whole", "first", "rest"))
    checkpoint = tmp_path / "ckpt"
    _run("train_gpt.py", "--preset", "tiny", "--steps", "12", "--log", str(whole))
    _run("train_gpt.py", "--preset", "tiny", "--steps", "12", "--stop-after", "5", "--log", str(first),
         "--save", str(checkpoint))
    out = _run("train_gpt.py", "--resume", str(checkpoint), "--log", str(rest), "--sample", "40")
    assert "resumed from" in out and "sample:" in out, out
    assert _gpt_losses(first) + _gpt_losses(rest) == _gpt_losses(whole)


@pytest.mark.slow
def test_train_digits_distributed_learns():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = os.pathsep.join(filter(None, [str(EXAMPLES.parent), os.environ.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", "arraykit.distributed.run", "--nproc-per-node", "2", "--master-port",
         str(port), str(EXAMPLES / "train_digits.py"), "--distributed", "--epochs", "12"],
        capture_output=True, text=True, timeout=600, cwd=EXAMPLES,
        env={**os.environ, "PYTHONPATH": path, "JAX_PLATFORMS": "cpu"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    reports = re.findall(r"2 processes, jit \(1 XLA compilation\(s\)\): 264 steps of 64 .* test accuracy ([0-9.]+)",
                         done.stdout)
    assert len(reports) == 1, done.stdout  # rank 0 alone prints
    assert float(reports[0]) >= 0.93, done.stdout


def _launch(script, *args, nproc=2):
    """``script`` under ``python -m arraykit.distributed.run`` on ``nproc`` local
    processes of one CPU device each; their output."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = os.pathsep.join(filter(None, [str(EXAMPLES.parent), os.environ.get("PYTHONPATH")]))
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(PYTHONPATH=path, JAX_PLATFORMS="cpu", XLA_FLAGS="--xla_force_host_platform_device_count=1")
    done = subprocess.run(
        [sys.executable, "-m", "arraykit.distributed.run", "--nproc-per-node", str(nproc), "--master-port",
         str(port), str(EXAMPLES / script), *args],
        capture_output=True, text=True, timeout=600, cwd=EXAMPLES, env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow
def test_train_gpt_distributed_gives_the_one_process_losses(tmp_path):
    """2 processes x 1 device, each loading half of every step's batch: the per-step
    losses of one process on the whole batch (float rounding apart), also across a
    checkpoint written and resumed on the 2 processes; rank 0 alone reports."""
    whole, first, rest = (tmp_path / f"{name}.jsonl" for name in ("whole", "first", "rest"))
    checkpoint = tmp_path / "ckpt"
    _run("train_gpt.py", "--preset", "tiny", "--steps", "6", "--log", str(whole))
    out = _launch("train_gpt.py", "--distributed", "--preset", "tiny", "--steps", "6", "--stop-after", "3",
                  "--log", str(first), "--save", str(checkpoint))
    assert "batch 8, 6 steps on 2 processes (2 devices)" in out, out
    assert out.count("checkpoint written to") == 1, out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt", "first.jsonl", "whole.jsonl"]  # rank 0's
    out = _launch("train_gpt.py", "--distributed", "--resume", str(checkpoint), "--log", str(rest),
                  "--sample", "20")
    assert out.count("resumed from") == 1 and out.count("sample:") == 1, out
    assert out.count("final validation") == 1, out
    losses = _gpt_losses(first) + _gpt_losses(rest)
    assert len(losses) == 6
    np.testing.assert_allclose(losses, _gpt_losses(whole), rtol=2e-6)
