"""chorus-p2p end to end (docs/p2p.md): the matrices' shape is the chosen CPUs squared, every measured cell
is a positive number and every unmeasured one is n/a / null, the printed tables say exactly what the JSON
says, --cpus selects, a CPU outside the allowed set is refused.   python3 check_chorus_p2p.py TOOL"""
import json
import os
import subprocess
import sys
import tempfile

TOOL = sys.argv[1]
SMALL = ['-s', '64K', '-n', '2', '-r', '3', '--latency-iters', '50']
MATRICES = ['unidirectional_gbps', 'bidirectional_gbps', 'latency_us']


def run(*args, affinity=None):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'p2p.json')
        pre = (lambda: os.sched_setaffinity(0, affinity)) if affinity else None
        done = subprocess.run([TOOL, '-J', path] + SMALL + list(args), capture_output=True, text=True,
                              preexec_fn=pre)
        assert done.returncode == 0, (args, done.returncode, done.stderr)
        with open(path) as f:
            return done.stdout, json.load(f)


def printed_tables(text):
    """Each table's cells as printed, in order: a table starts at its 'src\\dst' header line."""
    tables, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        if line.split() and line.split()[0] == 'src\\dst':
            labels = line.split()[1:]
            rows = [lines[i + 1 + r].split() for r in range(len(labels))]
            assert [row[0] for row in rows] == labels, rows
            tables.append((labels, [row[1:] for row in rows]))
    return tables


def check(text, doc, cpus, via):
    assert doc['cpus'] == cpus, (doc['cpus'], cpus)
    assert doc['via'] == via and len(doc['numa_nodes']) == len(cpus), doc
    tables = printed_tables(text)
    assert len(tables) == 3, text
    for name, (labels, cells) in zip(MATRICES, tables):
        values = doc[name]['values']
        assert labels == [str(c) for c in cpus], (name, labels)
        assert len(values) == len(cpus) and all(len(row) == len(cpus) for row in values), (name, values)
        for i, row in enumerate(values):
            for j, value in enumerate(row):
                measured = i != j or (name == 'unidirectional_gbps' and via == 'raw')
                where = (name, via, i, j, value)
                if measured:
                    assert isinstance(value, float) and value > 0, where
                    assert cells[i][j] == '%.2f' % value, (where, cells[i][j])
                else:
                    assert value is None and cells[i][j] == 'n/a', (where, cells[i][j])


allowed = sorted(os.sched_getaffinity(0))
for via in ['raw', 'chorus']:
    text, doc = run('--via', via)
    check(text, doc, allowed, via)
text, doc = run('--copy', 'write')
check(text, doc, allowed, 'raw')
assert doc['copy'] == 'write' and 'write (the source CPU copies' in text, text
text, doc = run('--cpus', str(allowed[0]))
check(text, doc, allowed[:1], 'raw')
if len(allowed) >= 2:
    pair = allowed[:2]
    text, doc = run('--cpus', '%d,%d' % tuple(pair), '--via', 'chorus')
    check(text, doc, pair, 'chorus')
    # Allowed to run on the first CPU only: the second one is refused, naming it and the allowed set.
    done = subprocess.run([TOOL, '--cpus', str(pair[1])] + SMALL, capture_output=True, text=True,
                          preexec_fn=lambda: os.sched_setaffinity(0, {pair[0]}))
    assert done.returncode == 2 and done.stdout == '', (done.returncode, done.stdout)
    assert ('chorus-p2p: error: --cpus: CPU %d is not in this process\'s allowed CPU set %d' % (pair[1], pair[0])
            in done.stderr), done.stderr
    text, doc = run(affinity={pair[0]})
    check(text, doc, [pair[0]], 'raw')
else:
    print('one CPU allowed: the pair and allowed-set checks need two')
done = subprocess.run([TOOL, '--cpus', str(allowed[-1] + 1)] + SMALL, capture_output=True, text=True)
assert done.returncode == 2 and 'is not in this process\'s allowed CPU set' in done.stderr, done.stderr
print('ok')
