"""Every operation of the chorus backend against values each rank computes itself.

Run under torchrun with any number of ranks (CI: 2, 3 and 4). Inputs are small integers, so every
sum, product and average below is exact in every dtype and the expected tensors are exact too.
Exits non-zero (an AssertionError naming the case) on the first wrong value.
"""

import sys
from datetime import timedelta

import torch
import torch.distributed as dist

dist.init_process_group("chorus", timeout=timedelta(seconds=60))
rank, n = dist.get_rank(), dist.get_world_size()
R = dist.ReduceOp
checked = 0


def value(r, i):
    return (r * 7 + i * 5) % 3 + 1  # 1..3, varying with i and r: products over 4 ranks stay <= 81, exact even in bfloat16


def make(dtype, r, count=10):
    base = torch.tensor([value(r, i) for i in range(count)], dtype=torch.int64)
    if dtype == torch.float8_e4m3fn:
        return base.float().to(dtype)
    if dtype == torch.bool:
        return (base % 2).to(torch.bool)
    if dtype.is_complex:
        return torch.complex(base.double(), (base * 2).double()).to(dtype)
    return base.to(dtype)


def fold(op, tensors):
    """The reduction of `tensors` (one per rank) as torch defines it, computed in int64/float64/bool."""
    dtype = tensors[0].dtype
    if dtype.is_complex:
        wide = [t.to(torch.complex128) for t in tensors]
    elif dtype == torch.bool:
        wide = [t.clone() for t in tensors]
    elif dtype.is_floating_point:
        wide = [t.double() for t in tensors]
    else:
        wide = [t.long() for t in tensors]
    out = wide[0].clone()
    for t in wide[1:]:
        if op in (R.SUM, R.AVG):
            out = out | t if dtype == torch.bool else out + t
        elif op == R.PRODUCT:
            out = out & t if dtype == torch.bool else out * t
        elif op == R.MIN:
            out = torch.minimum(out, t)
        elif op == R.MAX:
            out = torch.maximum(out, t)
        elif op == R.BAND:
            out = out & t
        elif op == R.BOR:
            out = out | t
        elif op == R.BXOR:
            out = out ^ t
    if op == R.AVG:
        out = out / len(tensors)
    return out.to(dtype)


def expect(got, want, what):
    global checked
    checked += 1
    if got.dtype != want.dtype or got.shape != want.shape or not torch.equal(got, want):
        raise AssertionError(f"rank {rank}/{n}: {what}: got {got.tolist()} want {want.tolist()}")


INTS = [torch.int8, torch.uint8, torch.int32, torch.int64]
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
CASES = [(d, op) for d in INTS for op in (R.SUM, R.PRODUCT, R.MIN, R.MAX, R.BAND, R.BOR, R.BXOR)]
CASES += [(d, op) for d in FLOATS for op in (R.SUM, R.AVG, R.PRODUCT, R.MIN, R.MAX)]
CASES += [(torch.bool, op) for op in (R.SUM, R.PRODUCT, R.MIN, R.MAX, R.BAND, R.BOR, R.BXOR)]
CASES += [(d, op) for d in (torch.complex64, torch.complex128) for op in (R.SUM, R.AVG)]
# uint32/uint64: torch has few kernels for them, so only what chorus combines itself.
CASES += [(d, op) for d in (torch.uint32, torch.uint64) for op in (R.SUM, R.MIN, R.MAX)]

root = n - 1
for dtype, op in CASES:
    every = [make(dtype, r) for r in range(n)]
    if dtype in (torch.uint32, torch.uint64):
        every64 = [t.long() for t in every]
        want = fold(op, every64).to(dtype)
    elif op == R.AVG and not dtype.is_complex:
        want = fold(op, every)  # exact sum / n in float64, rounded once
    else:
        want = fold(op, every)
    t = make(dtype, rank)
    dist.all_reduce(t, op=op)
    if op == R.AVG and dtype in (torch.float16, torch.bfloat16):
        tol = 1e-2
        if not torch.allclose(t.double(), want.double(), atol=tol, rtol=0):
            raise AssertionError(f"rank {rank}: all_reduce {dtype} AVG: {t.tolist()} vs {want.tolist()}")
    else:
        expect(t, want, f"all_reduce {dtype} {op}")
    t = make(dtype, rank)
    dist.reduce(t, dst=root, op=op)
    if rank == root and not (op == R.AVG and dtype in (torch.float16, torch.bfloat16)):
        expect(t, want, f"reduce {dtype} {op} to {root}")
    if op in (R.SUM, R.MAX, R.BXOR) and dtype not in (torch.uint32, torch.uint64):
        count = 3 * n
        whole = [make(dtype, r, count) for r in range(n)]
        want_all = fold(op, whole)
        out = torch.empty(3, dtype=dtype)
        dist.reduce_scatter_tensor(out, make(dtype, rank, count), op=op)
        expect(out, want_all[3 * rank:3 * rank + 3], f"reduce_scatter_tensor {dtype} {op}")
        out = torch.empty(3, dtype=dtype)
        dist.reduce_scatter(out, list(make(dtype, rank, count).chunk(n)), op=op)
        expect(out, want_all[3 * rank:3 * rank + 3], f"reduce_scatter {dtype} {op}")

# PREMUL_SUM: each rank's input times the factor, then summed (exact with factor 0.5).
for dtype in FLOATS:
    every = [make(dtype, r) for r in range(n)]
    want = fold(R.SUM, [e.double() * 0.5 for e in every]).to(dtype)
    for factor in (0.5, torch.tensor(0.5, dtype=dtype)):
        t = make(dtype, rank)
        dist.all_reduce(t, op=dist._make_nccl_premul_sum(factor))
        expect(t, want, f"all_reduce {dtype} PREMUL_SUM({factor})")
    out = torch.empty(2, dtype=dtype)
    src = make(dtype, rank, 2 * n)
    keep = src.clone()
    dist.reduce_scatter_tensor(out, src, op=dist._make_nccl_premul_sum(0.5))
    whole = fold(R.SUM, [make(dtype, r, 2 * n).double() * 0.5 for r in range(n)]).to(dtype)
    expect(out, whole[2 * rank:2 * rank + 2], f"reduce_scatter_tensor {dtype} PREMUL_SUM")
    expect(src, keep, f"reduce_scatter_tensor {dtype} PREMUL_SUM leaves its input alone")

# Refused: a clear DistBackendError, before any rank moves a byte (so every rank raises alike).
for dtype, op in [(torch.float32, R.BAND), (torch.int16, R.SUM), (torch.float8_e4m3fn, R.MAX), (torch.int32, None)]:
    t = make(dtype, rank)
    try:
        if op is None:
            dist.all_reduce(t, op=dist._make_nccl_premul_sum(2.0))
        else:
            dist.all_reduce(t, op=op)
    except dist.DistBackendError as e:
        assert "chorus" in str(e), str(e)
        checked += 1
    else:
        raise AssertionError(f"rank {rank}: all_reduce {dtype} {op} was not refused")

# Data movement: any dtype moves as bytes, int16 and complex included.
for dtype in (torch.float32, torch.int16, torch.complex64, torch.bool, torch.bfloat16):
    t = make(dtype, rank) if rank == 1 % n else torch.zeros(10, dtype=dtype)
    dist.broadcast(t, src=1 % n)
    expect(t, make(dtype, 1 % n), f"broadcast {dtype}")
    parts = [torch.empty(10, dtype=dtype) for _ in range(n)]
    dist.all_gather(parts, make(dtype, rank))
    for r in range(n):
        expect(parts[r], make(dtype, r), f"all_gather {dtype} part {r}")
    whole = torch.empty(10 * n, dtype=dtype)
    dist.all_gather_into_tensor(whole, make(dtype, rank))
    expect(whole, torch.cat([make(dtype, r) for r in range(n)]), f"all_gather_into_tensor {dtype}")
    # In place, as FSDP2 does it: the input is this rank's block of the output.
    whole = torch.zeros(10 * n, dtype=dtype)
    whole[10 * rank:10 * rank + 10] = make(dtype, rank)
    dist.all_gather_into_tensor(whole, whole[10 * rank:10 * rank + 10])
    expect(whole, torch.cat([make(dtype, r) for r in range(n)]), f"all_gather_into_tensor in place {dtype}")


def block(src, dst, rows):
    """What rank src sends rank dst in the all-to-all tests: `rows` rows of 3 values."""
    return torch.arange(rows * 3, dtype=torch.float32).reshape(rows, 3) + 100 * src + 10 * dst


# all_gather into views (the columns of a matrix: not contiguous), and zero-element tensors.
grid = torch.zeros(10, n, dtype=torch.int32)
dist.all_gather([grid[:, r] for r in range(n)], make(torch.int32, rank))
for r in range(n):
    expect(grid[:, r], make(torch.int32, r), f"all_gather into column {r}")
empty = torch.empty(0)
dist.all_reduce(empty)
dist.broadcast(empty, src=0)
whole = torch.empty(0)
dist.all_gather_into_tensor(whole, empty)
expect(whole, torch.empty(0), "zero-element all_gather_into_tensor")
try:
    dist.all_to_all_single(torch.empty(2 * n), torch.empty(3 * n))
except (dist.DistBackendError, RuntimeError, ValueError) as e:
    assert "size" in str(e), str(e)
    checked += 1
else:
    raise AssertionError("all_to_all_single of unequal sizes without splits was not refused")

# all_to_all_single, even and uneven (rank src sends src + dst + 1 rows to rank dst, 0 rows to itself when n > 2).
def rows(src, dst):
    return 0 if (src == dst and n > 2) else src + dst + 1


for even in (True, False):
    r_of = (lambda s, d: 2) if even else rows
    send = torch.cat([block(rank, d, r_of(rank, d)) for d in range(n)])
    out = torch.empty(sum(r_of(s, rank) for s in range(n)), 3)
    if even:
        dist.all_to_all_single(out, send)
    else:
        dist.all_to_all_single(out, send, output_split_sizes=[r_of(s, rank) for s in range(n)],
                               input_split_sizes=[r_of(rank, d) for d in range(n)])
    expect(out, torch.cat([block(s, rank, r_of(s, rank)) for s in range(n)]), f"all_to_all_single even={even}")
outs = [torch.empty(rows(s, rank), 3) for s in range(n)]
dist.all_to_all(outs, [block(rank, d, rows(rank, d)) for d in range(n)])
for s in range(n):
    expect(outs[s], block(s, rank, rows(s, rank)), f"all_to_all from {s}")

# gather / scatter, rooted at the last rank.
got = [torch.empty(10, dtype=torch.int64) for _ in range(n)] if rank == root else None
dist.gather(make(torch.int64, rank), got, dst=root)
if rank == root:
    for r in range(n):
        expect(got[r], make(torch.int64, r), f"gather part {r}")
part = torch.empty(10, dtype=torch.int64)
dist.scatter(part, [make(torch.int64, r) * 5 for r in range(n)] if rank == root else None, src=root)
expect(part, make(torch.int64, rank) * 5, "scatter")

# Non-contiguous tensors are copied in and out: a strided view is reduced, the rest untouched.
grid = torch.full((4, 6), float(rank + 1))
view = grid[:, ::2]
dist.all_reduce(view)
expect(grid[:, ::2], torch.full((4, 3), float(sum(range(1, n + 1)))), "all_reduce of a strided view")
expect(grid[:, 1::2], torch.full((4, 3), float(rank + 1)), "all_reduce leaves the view's gaps alone")
tr = torch.arange(12, dtype=torch.float32).reshape(3, 4).t() * (rank + 1)  # transposed: not contiguous
dist.broadcast(tr, src=0)
expect(tr, torch.arange(12, dtype=torch.float32).reshape(3, 4).t(), "broadcast of a transposed tensor")

# Point-to-point: a ring shift with batch_isend_irecv (every rank sends before it receives), then
# plain send/recv, and isend/irecv pairs.
nxt, prv = (rank + 1) % n, (rank - 1) % n
inbox = torch.empty(1000)
ops = [dist.P2POp(dist.isend, torch.full((1000,), float(rank)), nxt), dist.P2POp(dist.irecv, inbox, prv)]
for w in dist.batch_isend_irecv(ops):
    w.wait()
expect(inbox, torch.full((1000,), float(prv)), "batch_isend_irecv ring")
big = torch.empty(300_000)  # larger than the FIFO: sent in pieces
ops = [dist.P2POp(dist.irecv, big, prv), dist.P2POp(dist.isend, torch.full((300_000,), float(rank)), nxt)]
for w in dist.batch_isend_irecv(ops):
    w.wait()
expect(big, torch.full((300_000,), float(prv)), "batch_isend_irecv ring, 1.2 MB")
if rank == 0:
    dist.send(torch.arange(7), dst=n - 1)
    w = dist.irecv(inbox[:5], src=n - 1)
    w.wait()
    expect(inbox[:5], torch.full((5,), 9.0), "irecv")
elif rank == n - 1:
    t = torch.empty(7, dtype=torch.int64)
    dist.recv(t, src=0)
    expect(t, torch.arange(7), "recv")
    dist.isend(torch.full((5,), 9.0), dst=0).wait()

# Coalesced forms, through torch's coalescing manager (FSDP2 and DTensor use them).
with dist._coalescing_manager(async_ops=True) as cm:
    a = torch.full((3,), float(rank))
    b = torch.full((5,), float(2 * rank))
    dist.all_reduce(a)
    dist.all_reduce(b)
cm.wait()
expect(a, torch.full((3,), float(sum(range(n)))), "coalesced all_reduce a")
expect(b, torch.full((5,), float(2 * sum(range(n)))), "coalesced all_reduce b")
outs = [torch.empty(2 * n), torch.empty(3 * n)]
with dist._coalescing_manager(async_ops=True) as cm:
    dist.all_gather_into_tensor(outs[0], torch.full((2,), float(rank)))
    dist.all_gather_into_tensor(outs[1], torch.full((3,), float(rank + 10)))
cm.wait()
expect(outs[0], torch.arange(n, dtype=torch.float32).repeat_interleave(2), "coalesced all_gather_into_tensor 0")
expect(outs[1], (torch.arange(n, dtype=torch.float32) + 10).repeat_interleave(3), "coalesced all_gather_into_tensor 1")
outs = [torch.empty(2), torch.empty(1)]
with dist._coalescing_manager(async_ops=True) as cm:
    dist.reduce_scatter_tensor(outs[0], torch.ones(2 * n))
    dist.reduce_scatter_tensor(outs[1], torch.full((n,), 2.0))
cm.wait()
expect(outs[0], torch.full((2,), float(n)), "coalesced reduce_scatter_tensor 0")
expect(outs[1], torch.full((1,), 2.0 * n), "coalesced reduce_scatter_tensor 1")

# Object collectives, which torch builds from the operations above.
objs = [None] * n
dist.all_gather_object(objs, {"rank": rank, "name": "r" * (rank + 1)})
assert objs == [{"rank": r, "name": "r" * (r + 1)} for r in range(n)], objs
lst = [{"from": 0}, [1, 2, 3]] if rank == 0 else [None, None]
dist.broadcast_object_list(lst, src=0)
assert lst == [{"from": 0}, [1, 2, 3]], lst
gathered = [None] * n if rank == root else None
dist.gather_object(("hi", rank), gathered, dst=root)
if rank == root:
    assert gathered == [("hi", r) for r in range(n)], gathered
got = [None]
dist.scatter_object_list(got, [{"to": r} for r in range(n)] if rank == root else None, src=root)
assert got == [{"to": rank}], got
checked += 4

# A subgroup (the even ranks) is its own communicator; the others do not call it.
evens = list(range(0, n, 2))
group = dist.new_group(evens)
if rank in evens:
    t = torch.tensor([float(rank)])
    dist.all_reduce(t, group=group)
    expect(t, torch.tensor([float(sum(evens))]), "subgroup all_reduce")
dist.barrier()

# CUDA (here: any non-CPU) tensors are refused by name, pointing at nccl.
backend = dist.group.WORLD._get_backend(torch.device("cpu"))
try:
    backend.allreduce([torch.empty(4, device="meta")])
except dist.DistBackendError as e:
    assert "nccl" in str(e) and "meta" in str(e), str(e)
    checked += 1
else:
    raise AssertionError("a meta tensor was not refused")

# The transport the launcher implies (or CHORUS_TORCH_TRANSPORT names): mpi under mpirun in an MPI build.
import os  # noqa: E402

import chorus_torch  # noqa: E402

transport = backend.transport
want = os.environ.get("CHORUS_TORCH_TRANSPORT") or (
    "mpi" if chorus_torch.has_mpi and "OMPI_COMM_WORLD_SIZE" in os.environ else "shm")
assert transport == want, (transport, want)

# Point-to-point issued as separate calls (test_p2p.py), on a group whose 10 s timeout makes a deadlock
# fail fast. The mpi transport keeps send and recv on the group's worker, where these wait for each
# other (docs/torch.md): skipped there.
if transport == "shm":
    import test_p2p  # noqa: E402

    checked += test_p2p.run(dist.new_group(timeout=timedelta(seconds=10)))

dist.barrier()
dist.destroy_process_group()
print(f"test_ops: rank {rank} of {n} over {transport}: {checked} checks passed", flush=True)
sys.exit(0)
