"""A walk through arraykit's memory model: storages, strides, views and in-place writes.

Run it with ``python examples/strided_tour.py``; it prints as it goes and takes a
few seconds (mostly compiling the handful of kernels it uses).
"""

import numpy as np

import arraykit as ak


def heading(title):
    print()
    print("=" * 72)
    print(title)
    print("=" * 72)


def describe(name, t):
    """One line of metadata: shape, strides, offset, contiguity, address."""
    base = t.untyped_storage().data_ptr()
    print(
        f"  {name:<22} shape={str(t.shape):<14} stride={str(t.stride()):<14} "
        f"offset={t.storage_offset():<3} contiguous={str(t.is_contiguous()):<5} "
        f"data_ptr=storage+{t.data_ptr() - base}"
    )


def check(label, condition):
    """Print a claim and fail loudly if it does not hold."""
    print(f"  [{'ok' if condition else 'FAILED'}] {label}")
    if not condition:
        raise SystemExit(f"strided tour: claim failed: {label}")


def show(label, t):
    print(f"  {label}:")
    for line in np.array2string(np.array(t), separator=", ").splitlines():
        print("    " + line)


# ---------------------------------------------------------------------------
heading("1. A tensor is a storage plus a layout (shape, strides, offset)")
x = ak.arange(12, dtype=ak.float32).reshape(3, 4)
st = x.untyped_storage()
show("x = ak.arange(12, dtype=float32).reshape(3, 4)", x)
print(f"  x.untyped_storage()        -> {st!r}")
print(f"  storage size               -> {st.size()} elements, {st.nbytes()} bytes")
print(f"  storage data_ptr()         -> {st.data_ptr():#x}")
print(f"  x.data_ptr()               -> {x.data_ptr():#x}")
print(f"  x.stride(), x.storage_offset(), x.element_size() -> "
      f"{x.stride()}, {x.storage_offset()}, {x.element_size()}")
check("the storage holds exactly the 12 elements", st.size() == 12 and st.nbytes() == 48)
check("x.data_ptr() == storage data_ptr() + offset * itemsize",
      x.data_ptr() == st.data_ptr() + x.storage_offset() * x.element_size())

# ---------------------------------------------------------------------------
heading("2. Stride tables: C order (row-major) and channels_last, in elements")
print(f"  {'shape':<16} {'C strides':<20} {'channels_last strides'}")
for shape in [(5,), (3, 4), (2, 3, 4), (2, 3, 4, 5), (8, 16, 32, 32)]:
    t = ak.zeros(shape)
    cl = t.contiguous(memory_format=ak.channels_last) if len(shape) == 4 else None
    print(f"  {str(shape):<16} {str(t.stride()):<20} {cl.stride() if cl is not None else '-'}")
print("  The last dimension moves fastest; a stride is how many elements to skip")
print("  in the storage to advance one step along that dimension.")

# ---------------------------------------------------------------------------
heading("3. Transpose is a view: strides swap, data stays put")
xt = x.T
describe("x", x)
describe("x.T", xt)
check("x.T is not contiguous", not xt.is_contiguous())
check("x.T strides are x's strides swapped", xt.stride() == x.stride()[::-1])
check("x.T has the same data_ptr as x", xt.data_ptr() == x.data_ptr())
check("x.T shares x's storage object", xt.untyped_storage() is x.untyped_storage())

# ---------------------------------------------------------------------------
heading("4. contiguous(): copies a non-contiguous tensor, returns self otherwise")
c = xt.contiguous()
describe("x.T.contiguous()", c)
check("the copy has C strides (3, 1)", c.stride() == (3, 1))
check("the copy lives in a new storage (new data_ptr)", c.data_ptr() != x.data_ptr())
check("the copy does not share memory with x", not ak.shares_memory(c, x))
check("x.contiguous() is x (already contiguous: no copy)", x.contiguous() is x)

# ---------------------------------------------------------------------------
heading("5. Views share the storage: slices with steps, narrow, select, diagonal, flip")
sq = ak.arange(16, dtype=ak.float32).reshape(4, 4)
base = sq.untyped_storage().data_ptr()
views = {
    "sq": sq,
    "sq[::2, 1:]": sq[::2, 1:],
    "sq[::-1, ::3]": sq[::-1, ::3],
    "sq.narrow(1, 1, 2)": sq.narrow(1, 1, 2),
    "sq.select(0, 2)": sq.select(0, 2),
    "sq.diagonal()": sq.diagonal(),
    "sq.flip(1)": sq.flip(1),
}
for name, v in views.items():
    describe(name, v)
for name, v in views.items():
    check(f"{name}: data_ptr == storage ptr + offset*itemsize, and shares memory with sq",
          v.data_ptr() == base + v.storage_offset() * v.element_size()
          and ak.shares_memory(v, sq))
show("sq.diagonal()", views["sq.diagonal()"])
check("sq[0] and sq[1] share the storage object but no element",
      sq[0].untyped_storage() is sq[1].untyped_storage() and not ak.shares_memory(sq[0], sq[1]))

# ---------------------------------------------------------------------------
heading("6. expand: stride 0 repeats one element; writing into it raises")
col = ak.asarray([[1.0], [2.0], [3.0]])
e = col.expand(3, 4)
describe("col", col)
describe("col.expand(3, 4)", e)
show("col.expand(3, 4)", e)
check("the expanded dimension has stride 0", e.stride()[1] == 0)
try:
    e.add_(1.0)
except RuntimeError as err:
    print(f"  e.add_(1.0) -> RuntimeError: {err}")
else:
    check("writing into an expanded view raises", False)
e2 = e.clone()
e2.add_(1.0)
check("clone() first gives a writable dense copy", e2.stride() == (4, 1))

# ---------------------------------------------------------------------------
heading("7. In-place writes are seen through every view of the storage")
y = ak.arange(12, dtype=ak.float32).reshape(3, 4)
ptr = y.data_ptr()
row = y[1]
col2 = y[:, 2]
y[1] = 100.0                     # a write through y ...
row.add_(1.0)                    # ... an in-place op through the view row ...
mask = ak.asarray(np.arange(12).reshape(3, 4) % 3 == 0)
y[mask] = -1.0                   # ... and a masked write through y again
print("  y[1] = 100.0; row.add_(1.0); y[mask] = -1.0   (mask: every third element)")
# Each write donates the old buffer, so XLA updates it in place and the address stays;
# where the JAX release copies instead (seen with jax 0.10.0 on the CPU), the address
# changes and every view still sees the values, as checked below.
print(f"  y.data_ptr() unchanged (the old buffer was donated): {y.data_ptr() == ptr}")
print(f"  storage version counter after 3 writes: {y.untyped_storage().version}")
show("y", y)
show("row = y[1]", row)
show("col2 = y[:, 2]", col2)
check("row (a view) sees all three writes", row.tolist() == [101.0, 101.0, -1.0, 101.0])
check("col2 (another view) sees them too", col2.tolist() == [2.0, -1.0, 10.0])

# ---------------------------------------------------------------------------
heading("8. NumPy shares a CPU tensor's memory, as in PyTorch; DLPack exports are snapshots")
z = ak.zeros((2, 3), device="cpu")
shared = np.asarray(z)           # as PyTorch: a writable view of the tensor's memory
check("np.asarray(t) of a CPU tensor is writable and starts at t.data_ptr()",
      shared.flags.writeable and shared.ctypes.data == z.data_ptr())
z[0, 0] = 42.0
check("a later write through the tensor is seen by the NumPy array", shared[0, 0] == 42.0)
shared[1, 2] = 7.0
check("a write through the NumPy array is seen by the tensor", z[1, 2].item() == 7.0)
check("t.numpy() and np.asarray(t.T) are views of the same memory",
      np.shares_memory(z.numpy(), shared) and np.shares_memory(np.asarray(z.T), shared)
      and np.asarray(z.T).strides == (4, 12))
ptr = z.data_ptr()
z[0, 1] = 43.0
check("writes go on in place (data_ptr unchanged)", z.data_ptr() == ptr and shared[0, 1] == 43.0)
snapshot = np.array(z)           # np.array(t), t.tolist(), t.numpy().copy(): copies that keep their values
z[0, 0] = 0.0
check("np.array(t) is a copy: it keeps the values of when it was taken", snapshot[0, 0] == 42.0)
w = ak.arange(6, dtype=ak.float32, device="cpu").reshape(2, 3)
ptr = w.data_ptr()
dl = np.from_dlpack(w.T)         # DLPack: zero-copy, keeps the strides, read-only
check("np.from_dlpack(w.T) points into w's storage with w.T's strides (in bytes)",
      dl.ctypes.data == ptr and dl.strides == (4, 12) and not dl.flags.writeable)
w[0, 1] = -1.0
check("a DLPack export is a snapshot (where PyTorch's is a live view): the write copied, "
      "the export kept the old value", dl[1, 0] == 1.0 and w.data_ptr() != ptr)
print(f"  shared NumPy view now: {shared.tolist()}")
print(f"  copy taken before:     {snapshot.tolist()}")
print("  (see docs/pytorch.md, 'NumPy shares memory both ways', and docs/memory_model.md.)")

# ---------------------------------------------------------------------------
heading("9. view() versus reshape()")
m = ak.arange(12, dtype=ak.float32).reshape(3, 4)
v = m.view(2, 6)
check("view(2, 6) of a contiguous tensor shares memory", ak.shares_memory(v, m))
try:
    m.T.view(12)
except RuntimeError as err:
    print(f"  m.T.view(12) -> RuntimeError: {err}")
else:
    check("view of a transposed tensor raises", False)
r = m.T.reshape(12)
describe("m.T.reshape(12)", r)
check("reshape falls back to a copy (no shared memory)", not ak.shares_memory(r, m))
check("reshape of a contiguous tensor is a view", ak.shares_memory(m.reshape(4, 3), m))

# ---------------------------------------------------------------------------
heading("10. unfold: overlapping sliding windows without a copy")
s = ak.arange(10, dtype=ak.float32)
w = s.unfold(0, 4, 2)
describe("s", s)
describe("s.unfold(0, 4, 2)", w)
show("windows of 4, every 2", w)
check("windows share memory with s", ak.shares_memory(w, s))
s[4] = -4.0
show("after s[4] = -4.0, both windows holding element 4 changed", w)
check("windows 1 and 2 see the write", w[1, 2].item() == -4.0 and w[2, 0].item() == -4.0)

# ---------------------------------------------------------------------------
heading("11. channels_last: NCHW shape, NHWC storage order")
img = ak.arange(2 * 3 * 2 * 2, dtype=ak.float32).reshape(2, 3, 2, 2)
cl = img.contiguous(memory_format=ak.channels_last)
describe("img (N, C, H, W)", img)
describe("img channels_last", cl)
check("same shape, channels-last strides (C fastest)", cl.shape == img.shape and cl.stride() == (12, 1, 6, 3))
check("is_contiguous() is False, is_contiguous(channels_last) is True",
      not cl.is_contiguous() and cl.is_contiguous(memory_format=ak.channels_last))
check("same values", np.array_equal(np.array(cl), np.array(img)))
check("permute(0, 2, 3, 1) of a channels_last tensor is C-contiguous (NHWC)",
      cl.permute(0, 2, 3, 1).is_contiguous())

print()
print("Tour finished.")
