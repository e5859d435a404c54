"""L-BFGS with PyTorch's algorithm: a limited history of curvature pairs, the
two-loop recursion for the direction, fixed steps or a strong-Wolfe line search
(:mod:`.line_search`).

It re-evaluates the loss through a closure and decides on the host after every
evaluation (convergence tests, the line search), so it runs eagerly: one
``step(closure)`` is up to ``max_iter`` iterations. Its state (of the first
parameter, as PyTorch's) holds the direction ``d``, the step ``t``, the history
``old_dirs``/``old_stps``/``ro``, ``H_diag``, ``prev_flat_grad``, ``prev_loss``,
``al`` and the counters ``func_evals`` and ``n_iter``.
"""

from __future__ import annotations

import functools

import numpy as np

from ..api.creation import asarray, zeros
from ..api.manipulation import concat
from ..api.matrix_products import vecdot
from ..autograd.mode import enable_grad, no_grad
from ..tensors.tensor_type import Tensor
from .line_search import strong_wolfe
from .optimizer import Optimizer, check_hyperparameter

__all__ = ["LBFGS"]

_VECTORS = ("d", "prev_flat_grad")
_VECTOR_LISTS = ("old_dirs", "old_stps")


def _host(value):
    """A saved scalar (a tensor of either library, or a number) as a Python number."""
    return value if isinstance(value, (int, float)) or value is None else float(np.asarray(value))


class LBFGS(Optimizer):
    """``LBFGS(params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
    tolerance_change=1e-9, history_size=100, line_search_fn=None)``: PyTorch's
    algorithm (``line_search_fn`` None or ``"strong_wolfe"``); ``step`` needs a closure
    that clears the gradients, computes the loss, calls ``backward`` and returns it."""

    _real_floating_only = True

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None):
        check_hyperparameter(lr, "learning rate")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size,
                        line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _hyper_values(self, group):
        return (float(group["lr"]),)

    # ------------------------------------------------------------------ flat views

    def _flat_grad(self):
        """Every parameter's gradient (zeros where there is none), flattened and joined."""
        return concat([
            (p.grad if p.grad is not None else zeros(p.shape, dtype=p.dtype, device=p.device)).reshape(-1)
            for p in self._params
        ])

    def _move(self, step, direction):
        """Add ``step · direction`` (flat) to the parameters, in place."""
        offset = 0
        for p in self._params:
            n = p.numel()
            p.add_(direction[offset:offset + n].view(p.shape), alpha=step)
            offset += n

    def _evaluate_at(self, closure, start, step, *, direction):
        """The loss and flat gradient at ``start + step · direction``; the parameters are
        put back to ``start`` afterwards."""
        self._move(step, direction)
        with enable_grad():
            loss = float(closure())
        grad = self._flat_grad()
        for p, value in zip(self._params, start):
            p.copy_(value)
        return loss, grad

    # ------------------------------------------------------------------ the step

    def _direction(self, state, flat_grad):
        """Record the latest curvature pair (if its curvature is positive) and return
        the two-loop recursion's direction from ``flat_grad``."""
        y = flat_grad - state["prev_flat_grad"]
        s = state["d"] * state["t"]
        ys = float(vecdot(y, s))
        if ys > 1e-10:
            if len(state["old_dirs"]) == self.param_groups[0]["history_size"]:
                for name in ("old_dirs", "old_stps", "ro"):
                    state[name].pop(0)
            state["old_dirs"].append(y)
            state["old_stps"].append(s)
            state["ro"].append(1.0 / ys)
            state["H_diag"] = ys / float(vecdot(y, y))
        dirs, steps, ro = state["old_dirs"], state["old_stps"], state["ro"]
        al = state.setdefault("al", [None] * self.param_groups[0]["history_size"])
        q = -flat_grad
        for i in range(len(dirs) - 1, -1, -1):
            al[i] = float(vecdot(steps[i], q)) * ro[i]
            q = q - al[i] * dirs[i]
        r = q * state["H_diag"]
        for i in range(len(dirs)):
            be_i = float(vecdot(dirs[i], r)) * ro[i]
            r = r + (al[i] - be_i) * steps[i]
        return r

    def step(self, closure):
        """Up to ``max_iter`` iterations; returns the loss of the first evaluation."""
        if closure is None:
            raise RuntimeError("LBFGS.step requires a closure that reevaluates the model and returns the loss")
        with no_grad():
            return self._iterate(closure)

    def _iterate(self, closure):
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn = group["line_search_fn"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        with enable_grad():
            first_loss = closure()
        loss = float(first_loss)
        evaluations = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if float(flat_grad.abs().max()) <= tolerance_grad:
            return first_loss
        iteration = 0
        while iteration < max_iter:
            iteration += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                state.update(old_dirs=[], old_stps=[], ro=[], H_diag=1.0)
            else:
                d = self._direction(state, flat_grad)
            state["d"] = d
            state["prev_flat_grad"] = flat_grad
            state["prev_loss"] = prev_loss = loss
            t = min(1.0, 1.0 / float(flat_grad.abs().sum())) * lr if state["n_iter"] == 1 else lr
            state["t"] = t
            gtd = float(vecdot(flat_grad, d))
            if gtd > -tolerance_change:
                break
            extra = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                start = [p.clone() for p in self._params]
                evaluate = functools.partial(self._evaluate_at, closure, start, direction=d)
                loss, flat_grad, t, extra = strong_wolfe(evaluate, t, d, loss, flat_grad, gtd,
                                                         max_ls=max_eval - evaluations)
                state["t"] = t
                self._move(t, d)
                converged = float(flat_grad.abs().max()) <= tolerance_grad
            else:
                self._move(t, d)
                converged = False
                if iteration != max_iter:
                    with enable_grad():
                        loss = float(closure())
                    flat_grad = self._flat_grad()
                    converged = float(flat_grad.abs().max()) <= tolerance_grad
                    extra = 1
            evaluations += extra
            state["func_evals"] += extra
            if (iteration == max_iter or evaluations >= max_eval or converged
                    or float((d * t).abs().max()) <= tolerance_change or abs(loss - prev_loss) < tolerance_change):
                break
        return first_loss

    def _loaded_state(self, p, group, saved, index):
        """The saved state (this library's or PyTorch's) with its vectors as tensors
        and its scalars as Python numbers."""
        def tensor(value):
            return value if isinstance(value, Tensor) else asarray(np.asarray(value), device=p.device)

        state = {}
        for name, value in saved.items():
            if name in _VECTORS:
                state[name] = None if value is None else tensor(value)
            elif name in _VECTOR_LISTS:
                state[name] = [tensor(v) for v in value]
            elif name in ("ro", "al"):
                state[name] = [None if v is None else _host(v) for v in value]
            else:
                state[name] = _host(value)
        return state
