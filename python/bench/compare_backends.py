"""Interleaved chorus-vs-gloo timings under torchrun; prints markdown tables (docs/torch.md).

    python compare_backends.py [--ranks 2,4] [--rounds 3]

Each round runs gloo then chorus (all_reduce at 4 KiB..64 MiB, then the DDP step) for every rank
count, so both backends see the same machine load; each figure is the median over rounds.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
parser = argparse.ArgumentParser()
parser.add_argument("--ranks", default="2,4")
parser.add_argument("--rounds", type=int, default=3)
opts = parser.parse_args()
torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
sizes = [4 << 10, 64 << 10, 1 << 20, 8 << 20, 64 << 20]
results = {}  # (kind, ranks, backend, size) -> [values]
for _ in range(opts.rounds):
    for ranks in [int(r) for r in opts.ranks.split(",")]:
        for backend in ("gloo", "chorus"):
            for mode, extra in (("all_reduce", [str(s) for s in sizes]), ("ddp", [])):
                out = subprocess.run([torchrun, "--standalone", "--nproc_per_node", str(ranks),
                                      os.path.join(here, "bench_backend.py"), backend, mode, *extra],
                                     capture_output=True, text=True, timeout=600)
                if out.returncode != 0:
                    sys.exit(f"{backend} {mode} at {ranks} ranks failed:\n{out.stderr[-3000:]}")
                for line in out.stdout.splitlines():
                    row = json.loads(line)
                    key = (mode, ranks, backend, row.get("bytes", 0))
                    results.setdefault(key, []).append(row["us"] if mode == "all_reduce" else row["ms"])

with open("/proc/loadavg") as f:
    print(f"load average after the run: {f.read().split()[:3]}; {opts.rounds} interleaved rounds, medians\n")
print("| ranks | size | gloo (us) | chorus (us) | chorus / gloo |\n|---|---|---|---|---|")
for ranks in [int(r) for r in opts.ranks.split(",")]:
    for size in sizes:
        g = statistics.median(results[("all_reduce", ranks, "gloo", size)])
        c = statistics.median(results[("all_reduce", ranks, "chorus", size)])
        label = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
        print(f"| {ranks} | {label} | {g:.0f} | {c:.0f} | {c / g:.2f} |")
print("\n| ranks | DDP step, gloo (ms) | DDP step, chorus (ms) | chorus / gloo | rounds (gloo; chorus) |\n|---|---|---|---|---|")
for ranks in [int(r) for r in opts.ranks.split(",")]:
    g, c = results[("ddp", ranks, "gloo", 0)], results[("ddp", ranks, "chorus", 0)]
    print(f"| {ranks} | {statistics.median(g):.1f} | {statistics.median(c):.1f} | {statistics.median(c) / statistics.median(g):.2f} | "
          f"{', '.join(f'{v:.1f}' for v in g)}; {', '.join(f'{v:.1f}' for v in c)} |")
