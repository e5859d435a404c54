"""The meeting of the processes before JAX's runtime starts, over plain TCP.

``jax.distributed.initialize`` ends the process (a fatal error in C++, no Python
exception) when a peer does not turn up within its timeout. arraykit's processes
first meet here on the coordinator's address: rank 0 listens, the others connect
and say who they are, and only when all ``world_size`` ranks are there (and agree
on the world size) does each go on to start JAX's runtime on the same port. A
missing peer, a wrong port or two processes claiming one rank raise a
``RuntimeError`` naming them within the timeout instead.
"""

from __future__ import annotations

import socket
import time

_RETRY_S = 0.05


def _fail(what, host, port, timeout):
    return RuntimeError(
        f"init_process_group: {what} within {timeout:g} s at {host}:{port} "
        "(check MASTER_ADDR, MASTER_PORT and WORLD_SIZE, and that every process was started)"
    )


def meet(host, port, world_size, rank, timeout):
    """Return once all ``world_size`` processes reached ``host:port`` (rank 0 listens
    there); raise RuntimeError naming what is missing after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    if rank == 0:
        _host(port, world_size, deadline, host, timeout)
    else:
        _join(host, port, world_size, rank, deadline, timeout)


def _host(port, world_size, deadline, host, timeout):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        server.bind(("", port))
    except OSError as e:
        server.close()
        raise RuntimeError(f"init_process_group: rank 0 cannot listen on port {port}: {e}") from None
    server.listen(world_size)
    peers = {}
    try:
        while len(peers) < world_size - 1:
            server.settimeout(max(deadline - time.monotonic(), 0.001))
            try:
                conn, _ = server.accept()
            except socket.timeout:
                missing = sorted(set(range(1, world_size)) - set(peers))
                raise _fail(f"rank(s) {missing} of {world_size} did not connect", host, port,
                            timeout) from None
            conn.settimeout(max(deadline - time.monotonic(), 0.001))
            try:
                peer_rank, peer_world = map(int, _read_line(conn).split())
            except (OSError, ValueError):
                conn.close()
                continue
            problem = None
            if peer_world != world_size:
                problem = f"rank {peer_rank} has WORLD_SIZE={peer_world}, rank 0 has {world_size}"
            elif not 0 < peer_rank < world_size or peer_rank in peers:
                problem = f"rank {peer_rank} is out of range or claimed twice (world size {world_size})"
            if problem is not None:
                for c in (*peers.values(), conn):
                    _send(c, "error " + problem)
                raise RuntimeError(f"init_process_group: {problem}")
            peers[peer_rank] = conn
        for conn in peers.values():
            _send(conn, "ok")
        for conn in peers.values():  # the peers close first: the port is free for JAX at once
            conn.settimeout(max(deadline - time.monotonic(), 1.0))
            try:
                conn.recv(1)
            except OSError:
                pass
    finally:
        for conn in peers.values():
            conn.close()
        server.close()


def _join(host, port, world_size, rank, deadline, timeout):
    while True:
        try:
            conn = socket.create_connection((host, port), timeout=max(deadline - time.monotonic(), 0.001))
            break
        except OSError:
            if time.monotonic() >= deadline:
                raise _fail(f"rank {rank} could not reach rank 0", host, port, timeout) from None
            time.sleep(_RETRY_S)
    with conn:
        conn.settimeout(max(deadline - time.monotonic(), 0.001))
        try:
            _send(conn, f"{rank} {world_size}")
            answer = _read_line(conn)
        except OSError:
            raise _fail(f"rank {rank} reached rank 0 but not all other ranks joined", host, port,
                        timeout) from None
    if answer.startswith("error "):
        raise RuntimeError(f"init_process_group: {answer[6:]}")
    if answer != "ok":
        raise _fail(f"rank {rank} got no answer from rank 0", host, port, timeout)


def _send(conn, text):
    try:
        conn.sendall(text.encode() + b"\n")
    except OSError:
        pass


def _read_line(conn):
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(64)
        if not chunk:
            break
        data += chunk
    return data.decode().strip()
