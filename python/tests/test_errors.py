"""What a failure looks like on every rank. Started by launch.py (no torchrun agent to stop the
survivors). MODE is one of:

  mismatch   rank 0 all-reduces 100 floats, the others 99: every rank raises DistBackendError naming
             rank 0 and another rank with their counts;
  absent     the last rank never calls: the others raise DistBackendError within the group's timeout
             (20 s at init_process_group, then 2 s by dist.set_timeout) plus a second;
  abort      the last rank aborts the group while the others wait in an all_reduce (20 s timeout):
             they raise within 2 s, naming the abort, and get_error() says REMOTE_ERROR; the aborting
             rank's next call is refused;
  wait       Work.wait(timeout) shorter than the call: raises DistBackendError at once, and the call
             itself still completes once the late rank arrives;
  kill       DDP training; the last rank SIGKILLs itself at step 3: every survivor raises within 5 s,
             and no chorus segment is left in /dev/shm afterwards (checked by the last survivor);
  p2p-abort  the last rank aborts while the others wait in irecv from it (on a link not yet made: the
             last rank never sends them a message) and while its own irecv from rank 0 waits on a
             link that exists (20 s timeout): abort returns within 2 s, everyone raises within 2 s
             naming the abort, and the last rank's next send is refused;
  p2p-kill   the last rank sends one message to each other rank, then SIGKILLs itself while they wait
             in irecv from it (20 s timeout): they raise within 2 s naming the dead rank, and no chorus
             segment is left in /dev/shm.
Every rank exits 0 when it saw what it should.
"""

import os
import signal
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

mode = sys.argv[1]
dist.init_process_group("chorus", timeout=timedelta(seconds=20 if mode in ("abort", "absent", "p2p-abort", "p2p-kill") else 2))
rank, n = dist.get_rank(), dist.get_world_size()
last = n - 1


def backend():
    return dist.group.WORLD._get_backend(torch.device("cpu"))


def chorus_segments():
    return sorted(f for f in os.listdir("/dev/shm") if f.startswith(f"chorus-"))


def expect_no_segments_left():
    """Rank 0, once the dead rank's peers have failed: nothing of chorus's is left in /dev/shm."""
    time.sleep(0.5)
    left = chorus_segments()
    if left:
        raise AssertionError(f"chorus left shared memory behind: {left}")
    print("rank 0: /dev/shm holds no chorus segment", flush=True)


def expect_error(fn, *words, within=None):
    start = time.monotonic()
    try:
        fn()
    except dist.DistBackendError as e:
        took = time.monotonic() - start
        message = str(e).splitlines()[0]
        missing = [w for w in words if w not in message]
        if missing:
            raise AssertionError(f"rank {rank}: the error lacks {missing}: {message}")
        if within is not None and took > within:
            raise AssertionError(f"rank {rank}: raised after {took:.1f} s, more than {within} s: {message}")
        print(f"rank {rank}: raised after {took:.2f} s: {message[:300]}", flush=True)
        return
    raise AssertionError(f"rank {rank}: no DistBackendError")


if mode == "mismatch":
    t = torch.ones(100 if rank == 0 else 99)
    expect_error(lambda: dist.all_reduce(t), "rank 0", "100", "99", "disagree", within=5)
elif mode == "absent":
    dist.set_timeout(timedelta(seconds=2))  # the group's timeout, changed after construction
    if rank != last:
        expect_error(lambda: dist.all_reduce(torch.ones(8)), "2000 ms", f"rank {last}", within=3.5)
        error = str(backend().get_error())
        assert "TIMEOUT" in error or "REMOTE_ERROR" in error, error  # rank 0 timed out; the others were released
    else:
        time.sleep(4)
elif mode == "abort":
    if rank != last:
        expect_error(lambda: dist.all_reduce(torch.ones(8)), "aborted the process group", f"rank {last}", within=2)
        error = str(backend().get_error())
        assert "REMOTE_ERROR" in error, error
    else:
        time.sleep(0.5)
        backend().abort()
        expect_error(lambda: dist.all_reduce(torch.ones(8)), "shut down or aborted", within=1)
elif mode == "wait":
    if rank != last:
        t = torch.ones(8)
        work = dist.all_reduce(t, async_op=True)
        expect_error(lambda: work.wait(timeout=timedelta(milliseconds=200)), "timed out", "all_reduce", f"rank {rank}", within=1)
        work.wait()
        assert torch.equal(t, torch.full((8,), float(n))), t
    else:
        time.sleep(1)
        t = torch.ones(8)
        dist.all_reduce(t)
elif mode == "kill":
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    def train():
        for step in range(100):
            if rank == last and step == 3:
                os.kill(os.getpid(), signal.SIGKILL)
            opt.zero_grad()
            model(torch.randn(16, 32)).sum().backward()
            opt.step()
    # A survivor may also be told by torch (DDP's own checks) rather than by chorus: both are
    # DistBackendError naming the dead rank's failure.
    expect_error(train, within=5)
    if rank == 0:
        expect_no_segments_left()
    os._exit(0)  # the group is failed: leave without torch's teardown collectives
elif mode == "p2p-abort":
    t = torch.zeros(4)
    if rank != last:
        dist.send(torch.ones(4), last)
        w = dist.irecv(t, last)
        expect_error(w.wait, "aborted the process group", f"rank {last}", within=2)
        if rank == 0:
            time.sleep(1)  # rank 0 holds the store, which the others' waits poll until they are released
    else:
        for r in range(last):
            dist.recv(t, r)
        pending = dist.irecv(t, 0)  # rank 0 sends no second message
        time.sleep(0.5)
        start = time.monotonic()
        backend().abort()
        took = time.monotonic() - start
        assert took < 2, f"rank {rank}: abort() took {took:.1f} s"
        expect_error(pending.wait, "aborted the process group", within=1)
        expect_error(lambda: dist.send(t, 0), "shut down or aborted", within=1)
elif mode == "p2p-kill":
    t = torch.zeros(4)
    if rank != last:
        dist.recv(t, last)
        w = dist.irecv(t, last)
        expect_error(w.wait, f"rank {last}", "died", within=2)
        if rank == 0:
            expect_no_segments_left()
    else:
        for r in range(last):
            dist.send(torch.ones(4), r)
        os.kill(os.getpid(), signal.SIGKILL)
else:
    raise SystemExit(f"unknown mode {mode}")
os._exit(0)
