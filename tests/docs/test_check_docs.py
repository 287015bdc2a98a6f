#!/usr/bin/env python3
"""The docs test can fail: check_docs.py passes fixtures/good.md and fails each block of fixtures/bad.md with
the message that says why. Arguments: those of check_docs.py (--source-root, --build-dir, --cxx, ...)."""
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
check = [sys.executable, os.path.join(here, 'check_docs.py')] + sys.argv[1:]
root = sys.argv[sys.argv.index('--source-root') + 1]
rel = os.path.relpath(os.path.join(here, 'fixtures'), root)
failures = []

good = subprocess.run(check + [os.path.join(rel, 'good.md')], capture_output=True, text=True)
if good.returncode != 0 or '0 checks failed, 0 blocks in error' not in good.stdout:
    failures.append('good.md should pass:\n' + good.stdout + good.stderr)

bad = subprocess.run(check + [os.path.join(rel, 'bad.md')], capture_output=True, text=True)
expected = [
    'bad.md:3: a fence without an info string',
    'bad.md:7: a C++ block that is not a whole program needs',
    "error: 'summ' is not a member of 'chorus::",  # then the ABI tag (chorus::v0_1_0::ReduceOp, docs/abi.md)
    "the first shown line that matches nothing printed: 'stale'",
    "the first shown line that matches nothing printed: 'all_reduce ring, 3 ranks, count 2'",
    'a skip needs a reason',
    'is a session: make it ```console',
    'this text block follows the commands or program at',
    'the shown JSON differs from what the command printed',
]
if '--no-commands' in sys.argv:   # a build without tools: the shown commands are not run
    expected = [e for e in expected if 'ranks, count 2' not in e and 'JSON' not in e]
out = bad.stdout.replace('\u2018', "'").replace('\u2019', "'")
if bad.returncode != 1:
    failures.append(f'bad.md should fail with exit status 1, got {bad.returncode}')
for e in expected:
    if e not in out:
        failures.append(f'bad.md: expected {e!r} in the output')
if failures:
    print('\n'.join(failures))
    print('--- check_docs.py on bad.md printed:\n' + bad.stdout + bad.stderr)
    sys.exit(1)
print(f'check_docs.py passes good.md and fails bad.md with all {len(expected)} expected messages')
