"""The strong-Wolfe line search of :class:`arraykit.optim.LBFGS` (Nocedal and Wright,
*Numerical Optimization*, algorithms 3.5 and 3.6, with cubic interpolation), as
PyTorch runs it. Losses, slopes and steps are host floats; gradients are tensors."""

from __future__ import annotations

import math

from ..api.matrix_products import vecdot


def cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser, clipped to ``bounds`` (default: between ``x1`` and ``x2``), of the
    cubic through two points with their values ``f`` and slopes ``g``; the middle of
    the bounds when the cubic has no minimum."""
    low, high = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square < 0:
        return (low + high) / 2.0
    d2 = math.sqrt(d2_square)
    if x1 <= x2:
        position = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        position = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(position, low), high)


class _Point:
    """A trial step ``t`` with its loss ``f``, gradient ``g`` and slope ``gtd`` along the direction."""

    __slots__ = ("t", "f", "g", "gtd")

    def __init__(self, t, f, g, gtd):
        self.t, self.f, self.g, self.gtd = t, f, g, gtd


def strong_wolfe(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Search along ``d`` from the loss ``f`` (gradient ``g``, slope ``gtd``) for a step
    meeting the strong Wolfe conditions, starting at ``t``; ``evaluate(t)`` returns the
    loss and flat gradient there. Returns ``(loss, gradient, step, evaluations)``."""
    d_norm = float(d.abs().max())
    start = _Point(0, f, g, gtd)

    def trial(step):
        loss, grad = evaluate(step)
        return _Point(step, loss, grad, float(vecdot(grad, d)))

    new = trial(t)
    evaluations = 1
    previous = start
    bracket = None
    done = False
    iteration = 0
    while iteration < max_ls:
        if new.f > f + c1 * new.t * gtd or (iteration > 1 and new.f >= previous.f):
            bracket = [previous, new]
            break
        if abs(new.gtd) <= -c2 * gtd:
            bracket = [new]
            done = True
            break
        if new.gtd >= 0:
            bracket = [previous, new]
            break
        bounds = (new.t + 0.01 * (new.t - previous.t), new.t * 10)
        step = cubic_minimum(previous.t, previous.f, previous.gtd, new.t, new.f, new.gtd, bounds)
        previous = new
        new = trial(step)
        evaluations += 1
        iteration += 1
    if iteration == max_ls:
        bracket = [start, new]
    if done:
        return new.f, new.g, new.t, evaluations
    return _zoom(trial, bracket, f, gtd, d_norm, c1, c2, tolerance_change, max_ls, iteration, evaluations)


def _zoom(trial, bracket, f, gtd, d_norm, c1, c2, tolerance_change, max_ls, iteration, evaluations):
    """Shrink the bracket around a step meeting the conditions (the search's second stage)."""
    insufficient = False
    low, high = (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)
    while iteration < max_ls:
        if abs(bracket[1].t - bracket[0].t) * d_norm < tolerance_change:
            break
        a, b = bracket
        t = cubic_minimum(a.t, a.f, a.gtd, b.t, b.f, b.gtd)
        top, bottom = max(a.t, b.t), min(a.t, b.t)
        eps = 0.1 * (top - bottom)
        if min(top - t, t - bottom) < eps:
            if insufficient or t >= top or t <= bottom:
                t = top - eps if abs(t - top) < abs(t - bottom) else bottom + eps
                insufficient = False
            else:
                insufficient = True
        else:
            insufficient = False
        new = trial(t)
        evaluations += 1
        iteration += 1
        if new.f > f + c1 * t * gtd or new.f >= bracket[low].f:
            bracket[high] = new
            low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
        else:
            if abs(new.gtd) <= -c2 * gtd:
                bracket[low] = new
                break
            if new.gtd * (bracket[high].t - bracket[low].t) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = new
    best = bracket[low]
    return best.f, best.g, best.t, evaluations
