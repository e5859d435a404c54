"""The launcher, torchrun's spelling: ``python -m arraykit.distributed.run
--nproc-per-node N script.py args`` starts N processes of ``script.py`` on this
host with torchrun's environment (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
``LOCAL_WORLD_SIZE``, ``GROUP_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``), which
:func:`arraykit.distributed.init_process_group` reads.

On several hosts run it once per host with the same ``--nnodes``,
``--master-addr`` (rank 0's host) and ``--master-port``, and ``--node-rank``
0, 1, ... SIGINT and SIGTERM are forwarded to the workers. When one worker
fails, the others are stopped (SIGTERM, then SIGKILL after ``--stop-timeout``
seconds) and the launcher exits with status 1 after naming the worker; no worker
is left behind. Each worker runs in its own process group, so whatever it starts
is stopped with it.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

__all__ = ["main"]

_POLL_S = 0.05


def _parser():
    p = argparse.ArgumentParser(
        prog="python -m arraykit.distributed.run",
        description="Start the processes of a data-parallel job (torchrun's options).",
    )
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1,
                   help="processes on this host (default 1)")
    p.add_argument("--nnodes", type=int, default=1, help="hosts taking part (default 1)")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0, help="this host's rank (default 0)")
    p.add_argument("--master-addr", "--master_addr", default="127.0.0.1",
                   help="address of the host of rank 0 (default 127.0.0.1)")
    p.add_argument("--master-port", "--master_port", type=int, default=29500,
                   help="a free port on that host (default 29500)")
    p.add_argument("--stop-timeout", type=float, default=5.0,
                   help="seconds between SIGTERM and SIGKILL when stopping workers (default 5)")
    p.add_argument("-m", "--module", action="store_true",
                   help="run the script argument as a module (python -m)")
    p.add_argument("script", help="the training script (or module with -m)")
    p.add_argument("script_args", nargs=argparse.REMAINDER, help="its arguments")
    return p


def _environments(args):
    world = args.nnodes * args.nproc_per_node
    for local in range(args.nproc_per_node):
        env = dict(os.environ)
        env.update(
            RANK=str(args.node_rank * args.nproc_per_node + local), LOCAL_RANK=str(local),
            WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(args.nproc_per_node),
            GROUP_RANK=str(args.node_rank), MASTER_ADDR=args.master_addr,
            MASTER_PORT=str(args.master_port), PYTHONUNBUFFERED="1",
        )
        yield env


def _describe(code):
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def _stop(workers, grace):
    """SIGTERM every live worker's process group, SIGKILL what is left after ``grace``."""
    for proc in workers:
        if proc.poll() is None:
            _signal_group(proc, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for proc in workers:
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 0))
        except subprocess.TimeoutExpired:
            pass
    for proc in workers:
        _signal_group(proc, signal.SIGKILL)  # also whatever the worker started
        proc.wait()


def _signal_group(proc, sig):
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def main(argv=None):
    """Run the launcher with ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    args = _parser().parse_args(argv)
    if args.nproc_per_node < 1 or args.nnodes < 1 or not 0 <= args.node_rank < args.nnodes:
        _parser().error(
            f"need --nproc-per-node >= 1, --nnodes >= 1 and 0 <= --node-rank < --nnodes "
            f"(got {args.nproc_per_node}, {args.nnodes}, {args.node_rank})"
        )
    command = [sys.executable, *(["-m"] if args.module else []), args.script, *args.script_args]
    workers = []
    received = []

    def forward(signum, frame):
        received.append(signum)
        for proc in workers:
            if proc.poll() is None:
                _signal_group(proc, signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        for env in _environments(args):
            workers.append(subprocess.Popen(command, env=env, start_new_session=True))
        first = args.node_rank * args.nproc_per_node
        while True:
            codes = [proc.poll() for proc in workers]
            failed = next((i for i, c in enumerate(codes) if c not in (None, 0)), None)
            if failed is not None or received:
                live = sum(c is None for c in codes)
                if failed is not None:
                    print(
                        f"arraykit.distributed.run: rank {first + failed} (local rank {failed}, "
                        f"pid {workers[failed].pid}) {_describe(codes[failed])}; stopping the "
                        f"{live} other running worker(s)", file=sys.stderr, flush=True,
                    )
                _stop(workers, args.stop_timeout)
                return 1 if failed is not None else 128 + received[0]
            if all(c == 0 for c in codes):
                return 0
            time.sleep(_POLL_S)
    finally:
        _stop(workers, 0)
        for s, handler in previous.items():
            signal.signal(s, handler)


if __name__ == "__main__":
    sys.exit(main())
