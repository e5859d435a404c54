"""Tiered compilation of eager CPU programs.

XLA's default CPU emitters make faster code for convolutions and transcendental
functions, but compile it three to four times more slowly than the classic emitters
(``xla_cpu_use_fusion_emitters=False``), whose code computes the same values bit for
bit for most of them (those :func:`arraykit.kernels.launch.compile_options` tiers:
float32 and float64 convolutions, ``exp``, ``tanh``, ``logistic``, ...; not ``tan``,
``cbrt`` or 16-bit floats). A kernel given :data:`TIERED` options is therefore
compiled with the classic emitters when first called, and again with XLA's
defaults on a background thread once it is called again, whose program takes over
when it is ready. A model's first eager step no longer waits for the slow
compilations; its later steps run the fast code.
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
import time

import jax

from ..core.jax_compat import fast_call, trace_state_clean

TIERED = "tiered"  # compiler options meaning: the classic emitters first, XLA's defaults later


def final_options(options):
    """The compiler options ``jax.jit`` takes for ``options``: XLA's defaults (None) for
    :data:`TIERED`, else ``options`` itself."""
    return None if options == TIERED else options


class TieredJit:
    """``jax.jit(fn, **jit_options)`` whose first eager call compiles with the compiler
    options ``quick`` and runs that program until the same program compiled with XLA's
    defaults, queued at its second call (a program run once is not worth it; the
    first calls of a new model's kernels get both cores), is ready
    (:func:`upgrades_pending`). Other arguments than
    the first call's, and calls inside an outer JAX trace, go to ``jax.jit(fn)``
    itself."""

    __slots__ = ("full", "quick", "run", "__weakref__")

    def __init__(self, fn, quick, **jit_options):
        self.full = jax.jit(fn, **jit_options)
        self.quick = quick
        self.run = self._first

    def __call__(self, *args):
        return self.run(*args)

    def _first(self, *args):
        if not trace_state_clean():
            return self.full(*args)
        lowered = self.full.trace(*args).lower()
        quick = lowered.compile(self.quick)
        result = quick(*args)
        run = fast_call(quick)
        full = self.full
        queued = []

        def quick_run(*a):
            if not queued:  # called again: worth XLA's defaults
                queued.append(lowered)
                _WORKER.submit(lowered, self)
            try:
                return run(*a)
            except (TypeError, ValueError):  # other arguments, or a trace
                return full(*a)

        self.run = quick_run
        return result


QUIET_SECONDS = 0.2  # the upgrades wait until no other thread compiled for this long


class _Worker:
    """One daemon thread compiling queued programs with XLA's defaults; the compiled
    program lands in the dispatch cache of the ``jax.jit`` it was lowered from, which
    its :class:`TieredJit` then calls. It compiles only once no other thread has
    compiled for ``QUIET_SECONDS`` (XLA's CPU compiler uses more than one core: a
    model's first step, compiling its kernels, keeps the machine to itself). Stopped
    at exit (a program being compiled is finished first; those queued are dropped)."""

    def __init__(self):
        self.forget()
        self.last_compile = time.monotonic()  # by another thread than this worker's

    def note_compile(self, event, seconds, **_):
        """JAX's monitoring listener: remember when another thread last compiled."""
        if event == _COMPILE_EVENT and threading.current_thread() is not self.thread:
            self.last_compile = time.monotonic()

    def _wait_for_quiet(self):
        while not self.stopping.is_set():
            quiet = time.monotonic() - self.last_compile
            if quiet >= QUIET_SECONDS:
                return True
            self.stopping.wait(QUIET_SECONDS - quiet)
        return False

    def submit(self, lowered, tiered):
        with self.lock:
            self.pending += 1
            if self.thread is None:
                self.thread = threading.Thread(target=self._loop, name="arraykit-tier-up",
                                               daemon=True)
                self.thread.start()
        self.jobs.put((lowered, tiered))

    def _loop(self):
        while True:
            job = self.jobs.get()
            if job is None:
                return
            lowered, tiered = job
            try:
                if self._wait_for_quiet():
                    lowered.compile()
                    tiered.run = tiered.full
            except Exception:  # noqa: BLE001 - the first program stays, and is correct
                pass
            finally:
                with self.lock:
                    self.pending -= 1
                    self.done.notify_all()

    def forget(self):
        """No thread, nothing queued: the start, and a forked child's state (the
        parent's thread and queue are not there)."""
        self.jobs = queue.Queue()
        self.thread = None
        self.lock = threading.Lock()
        self.pending = 0
        self.done = threading.Condition(self.lock)
        self.stopping = threading.Event()

    def wait(self, timeout=None):
        with self.lock:
            return self.done.wait_for(lambda: self.pending == 0, timeout)

    def stop(self):
        thread = self.thread
        if thread is None:
            return
        while True:  # drop what is queued, then let the thread end
            try:
                self.jobs.get_nowait()
            except queue.Empty:
                break
            with self.lock:
                self.pending -= 1
        self.stopping.set()
        self.jobs.put(None)
        thread.join()
        self.stopping.clear()
        with self.lock:
            self.thread = None
            self.done.notify_all()


_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
_WORKER = _Worker()
atexit.register(_WORKER.stop)
if hasattr(os, "register_at_fork"):  # not on Windows, which does not fork
    os.register_at_fork(after_in_child=_WORKER.forget)
jax.monitoring.register_event_duration_secs_listener(_WORKER.note_compile)


def upgrades_pending():
    """How many programs are queued or compiling for their XLA-default version."""
    return _WORKER.pending


def wait_for_upgrades(timeout=None):
    """Block until every queued program is compiled with XLA's defaults or has failed
    to (keeping its first program) (True), or until ``timeout`` seconds have passed
    (False). Upgrades wait while other threads keep compiling (``QUIET_SECONDS``):
    without a timeout, this waits as long as they do."""
    return _WORKER.wait(timeout)
