"""Point-to-point issued as separate calls, in patterns gloo completes: every rank isends to both
neighbours before it irecvs from either, an isend-then-recv ring, several messages on one pair
in order, p2p beside a collective, and isend/irecv mixed with batch_isend_irecv on one pair.

test_ops.py runs run() on a group of every rank with a 10 s timeout (CI: 2, 3 and 4 ranks, shm), so a
pattern that deadlocks fails within seconds with chorus's timeout error instead of hanging. Alone
(launch.py N test_p2p.py, P2P_BACKEND=gloo to compare) it makes that group itself. Raises an
AssertionError naming the case and the rank on the first wrong value.
"""

import os
import time
from collections import defaultdict
from datetime import timedelta

import torch
import torch.distributed as dist


def run(group):
    """Every case below on `group` (every rank of the job); returns the number of checks."""
    rank, n = dist.get_rank(), dist.get_world_size()
    nxt, prv = (rank + 1) % n, (rank - 1) % n
    sent = defaultdict(int)      # messages sent to each peer so far
    received = defaultdict(int)  # messages received from each peer so far
    checked = 0

    def payload(src, dst, k, count, dtype):
        """Message k from src to dst: distinct per pair and per message, exact in every dtype used."""
        base = src * 1000 + dst * 100 + (k % 10) * 10
        return (torch.arange(count, dtype=torch.int64) % 7 + base).to(dtype)


    def isend(dst, count, dtype):
        t = payload(rank, dst, sent[dst], count, dtype)
        sent[dst] += 1
        return dist.isend(t, dst, group=group)


    def irecv(src, count, dtype):
        """(work, tensor, expected) for the next message from src."""
        t = torch.full((count,), -1, dtype=dtype)
        want = payload(src, rank, received[src], count, dtype)
        received[src] += 1
        return dist.irecv(t, src, group=group), t, want


    def expect(got, want, what):
        nonlocal checked
        checked += 1
        if not torch.equal(got, want):
            bad = (got != want).nonzero()[0].item()
            raise AssertionError(f"rank {rank}/{n}: {what}: element {bad} is {got[bad].item()}, want {want[bad].item()}")


    # Sizes: one element; 65537 (over one 256 KiB FIFO slot in float32); 250001 (1000004 bytes in float32,
    # 2 MB in int64: more than a pair's whole FIFO of 4 slots).
    start = time.monotonic()
    for dtype in (torch.float32, torch.int64):
        for count in (1, 65537, 250001):
            what = f"isend to next and previous, then irecv from both ({count} x {dtype})"
            sends = [isend(nxt, count, dtype), isend(prv, count, dtype)]
            order = (prv, nxt) if count % 2 else (nxt, prv)  # both receive orders
            recvs = [irecv(src, count, dtype) for src in order]
            for w, t, want in recvs:
                w.wait()
                expect(t, want, what)
            for w in sends:
                w.wait()

    # A ring: every rank isends to the next, then blocks in recv from the previous (torch's usual ring
    # shift; gloo completes it). A ring of blocking sends, each before its recv, waits until the timeout
    # on gloo as on chorus (a send completes when its receiver has taken it): not tested.
    for count in (1, 1000, 65537, 262145):
        s = isend(nxt, count, torch.float32)
        u = torch.empty(count)
        want = payload(prv, rank, received[prv], count, torch.float32)
        received[prv] += 1
        dist.recv(u, prv, group=group)
        s.wait()
        expect(u, want, f"isend-then-recv ring of {count} floats")

    # Several messages on each pair arrive in the order issued, whatever their sizes.
    counts = [3, 300001, 1, 70000, 5, 0]
    sends = [isend(nxt, c, torch.int64) for c in counts]
    recvs = [irecv(prv, c, torch.int64) for c in counts]
    for i, (w, t, want) in enumerate(recvs):
        w.wait()
        expect(t, want, f"message {i} of {len(counts)} from rank {prv} ({counts[i]} x int64)")
    for w in sends:
        w.wait()

    # A collective between an isend and its irecv: point-to-point does not wait behind collectives.
    s = isend(nxt, 100000, torch.float32)
    total = torch.ones(4)
    dist.all_reduce(total, group=group)
    expect(total, torch.full((4,), float(n)), "all_reduce between isend and irecv")
    w, t, want = irecv(prv, 100000, torch.float32)
    w.wait()
    s.wait()
    expect(t, want, "irecv after an all_reduce")

    # isend/irecv then batch_isend_irecv on the same pairs: one order per pair across both forms.
    s = isend(nxt, 5, torch.int64)
    w1, t1, want1 = irecv(prv, 5, torch.int64)
    t2 = payload(rank, nxt, sent[nxt], 300000, torch.float32)
    sent[nxt] += 1
    u2 = torch.empty(300000)
    want2 = payload(prv, rank, received[prv], 300000, torch.float32)
    received[prv] += 1
    ops = [dist.P2POp(dist.irecv, u2, prv, group=group), dist.P2POp(dist.isend, t2, nxt, group=group)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    w1.wait()
    s.wait()
    expect(t1, want1, "isend before a batch")
    expect(u2, want2, "batch after an isend")

    dist.barrier(group=group)
    print(f"test_p2p: rank {rank}/{n}: {checked} point-to-point checks passed in {time.monotonic() - start:.2f} s",
          flush=True)
    return checked


if __name__ == "__main__":
    dist.init_process_group(os.environ.get("P2P_BACKEND", "chorus"), timeout=timedelta(seconds=10))
    run(dist.group.WORLD)
    dist.destroy_process_group()
