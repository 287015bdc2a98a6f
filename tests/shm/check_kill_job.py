#!/usr/bin/env python3
"""SIGKILL inside a chorus-run job of shm ranks (issue 28's fault test): kill_job.cpp's ranks run 64 MiB
all_reduces with a 60 s timeout and rank 2 kills itself; every survivor must be released with 'peer failed'
naming rank 2 within 2 s of its last call, chorus-run must exit with rank 2's status (128 + 9), and nothing
of the job may stay in /dev/shm. Then every rank kills itself right after setup: again nothing may stay.
Usage: check_kill_job.py CHORUS_RUN KILL_JOB"""
import os
import re
import subprocess
import sys


def run(chorus_run, job, mode):
    done = subprocess.run([chorus_run, '-n', '4', '--label', job, mode], capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr


def leftovers(output):
    pids = re.findall(r'^\[\d\] pid (\d+)$', output, re.M)
    if len(pids) != 4:
        return ['expected 4 pids in the output, found %d' % len(pids)]
    names = os.listdir('/dev/shm') if os.path.isdir('/dev/shm') else []
    return ['/dev/shm/%s left behind' % n for n in names for p in pids if n.startswith('chorus-%s-' % p)]


def main(chorus_run, job):
    failures = []
    status, output = run(chorus_run, job, 'one')
    if status != 128 + 9:
        failures.append('chorus-run exited %d, expected 137 (rank 2 killed by SIGKILL)' % status)
    for rank in (0, 1, 3):
        line = re.search(r'^\[%d\] released after (\d+) ms: (.*)$' % rank, output, re.M)
        if not line:
            failures.append('rank %d printed no release' % rank)
            continue
        if int(line.group(1)) > 2000:
            failures.append('rank %d released %s ms after its last call (limit 2000)' % (rank, line.group(1)))
        if not line.group(2).startswith('peer failed') or 'rank 2' not in line.group(2):
            failures.append('rank %d: %s' % (rank, line.group(2)))
    failures += leftovers(output)
    status, output = run(chorus_run, job, 'all')
    if status != 128 + 9:
        failures.append('kill after setup: chorus-run exited %d, expected 137' % status)
    failures += ['kill after setup: ' + f for f in leftovers(output)]
    for f in failures:
        print('FAIL: ' + f)
    if failures:
        print(output)
        return 1
    print('ok: survivors released within 2 s naming rank 2; nothing left in /dev/shm')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1], sys.argv[2]))
