# chorus-schedule --json: exact keys in order, the action names, and the simulator's numbers with unit-time
# actions, checked against the closed forms of docs/pipeline.md: GPipe and 1F1B makespan (m+p-1)(F+B) and bubble
# (p-1)/(m+p-1), 1F1B peak min(p-i, m); interleaved idle 1F1B's / v; ZB-H1 idle p-1; and a ring schedule's JSON.
#   usage: check_schedule_json.py CHORUS_SCHEDULE
import json, subprocess, sys
from fractions import Fraction
tool = sys.argv[1]
def run(*args):
    return json.loads(subprocess.run([tool, '--json'] + list(args), check=True, capture_output=True, text=True).stdout)
keys = ['schedule', 'stages', 'microbatches', 'chunks', 'actions', 'makespan', 'bubble_fraction', 'peak_in_flight']
p, m = 4, 8
def check(doc, name, chunks, makespan, idle):
    assert list(doc) == keys, list(doc)
    assert (doc['schedule'], doc['stages'], doc['microbatches'], doc['chunks']) == (name, p, m, chunks), doc
    assert len(doc['actions']) == p and all(isinstance(a, str) for row in doc['actions'] for a in row)
    assert doc['makespan'] == makespan, (name, doc['makespan'], makespan)
    assert abs(doc['bubble_fraction'] - float(Fraction(p * idle, p * makespan))) < 1e-12, (name, doc['bubble_fraction'])
    assert len(doc['peak_in_flight']) == p
doc = run('--pipeline', '1f1b', '--stages', str(p), '--microbatches', str(m))
check(doc, '1f1b', 1, (m + p - 1) * 2, (p - 1) * 2)
assert doc['makespan'] == 22 and abs(doc['bubble_fraction'] - 3 / 11) < 1e-12
assert doc['peak_in_flight'] == [min(p - i, m) for i in range(p)] == [4, 3, 2, 1], doc['peak_in_flight']
assert doc['actions'][0][:6] == ['F0', 'F1', 'F2', 'F3', 'B0', 'F4'], doc['actions'][0]
assert doc['actions'][3][:4] == ['F0', 'B0', 'F1', 'B1'], doc['actions'][3]
doc = run('--pipeline', 'gpipe', '--stages', str(p), '--microbatches', str(m))
check(doc, 'gpipe', 1, (m + p - 1) * 2, (p - 1) * 2)
assert doc['peak_in_flight'] == [m] * p and doc['actions'][2] == ['F%d' % i for i in range(m)] + ['B%d' % i for i in range(m)]
v = 2  # a chunk costs 1, a whole stage v: 1F1B's idle (p-1)(v+v) divided by v
doc = run('--pipeline', 'interleaved', '--stages', str(p), '--microbatches', str(m), '--chunks', str(v))
check(doc, 'interleaved', v, 2 * m * v + (p - 1) * 2, (p - 1) * 2)
assert doc['actions'][0][:5] == ['0.F0', '0.F1', '0.F2', '0.F3', '1.F0'], doc['actions'][0]
assert sorted(doc['actions'][1]) == sorted('%d.%s%d' % (c, k, b) for c in range(2) for k in 'FB' for b in range(m))
doc = run('--pipeline', 'zb-h1', '--stages', str(p), '--microbatches', str(m))
check(doc, 'zb-h1', 1, 3 * m + p - 1, p - 1)
assert max(doc['peak_in_flight']) == p and doc['peak_in_flight'][0] == p
assert sorted(doc['actions'][2]) == sorted('%s%d' % (k, b) for k in 'FIW' for b in range(m))
doc = run('--collective', 'all_reduce', '--algo', 'ring', '--ranks', '4', '--count', '8')
assert (doc['collective'], doc['algorithm'], doc['ranks'], doc['count'], doc['rounds']) == ('all_reduce', 'ring', 4, 8, 6), doc
assert doc['steps'][0][0] == {'op': 'send', 'peer': 1, 'count': 2, 'src': {'buffer': 'in', 'offset': 0}, 'dst': None, 'round': 0}
print('ok')
