"""launch.py [--killed R] N SCRIPT ARGS...: starts N copies of SCRIPT as ranks 0..N-1 with torch's env://
variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), as mpirun or a batch system would, with no
agent that stops the survivors when one rank dies (torchrun's does). Waits at most 120 s, prints
each rank's exit status and exits with the first non-zero one (or 0). --killed R: rank R is meant to
die by SIGKILL, and any other end of it is a failure."""

import os
import socket
import subprocess
import sys
import time

argv = sys.argv[1:]
killed = None
if argv[0] == "--killed":
    killed, argv = int(argv[1]), argv[2:]
n, script, args = int(argv[0]), argv[1], argv[2:]
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
procs = []
for rank in range(n):
    env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(n), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(n),
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    procs.append(subprocess.Popen([sys.executable, script, *args], env=env))
deadline = time.time() + 120
codes = []
for rank, p in enumerate(procs):
    try:
        codes.append(p.wait(timeout=max(1, deadline - time.time())))
    except subprocess.TimeoutExpired:
        for q in procs:
            q.kill()
        print(f"launch.py: rank {rank} still running after 120 s: killed the job", flush=True)
        sys.exit(124)
print("launch.py: exit status per rank", codes, flush=True)
if killed is not None:
    if codes[killed] != -9:
        print(f"launch.py: rank {killed} was to die by SIGKILL; it ended with {codes[killed]}", flush=True)
        sys.exit(1)
    codes[killed] = 0
sys.exit(next((c for c in codes if c != 0), 0))
