"""chorus-trace-svg end to end: real step traces from example 01 (ring and tree all-reduce, 4 ranks) drawn
as SVG, then checked against the JSON they came from: the picture is XML, has one rect per slice and one
arrow per flow, a track per rank in rank order, every step's rect inside its collective's span one row
down, and every arrow starting in a send's rect and ending in a receive's on the ranks the flow joins.
Files it cannot draw exit 2 with "chorus-trace-svg: error: ".
usage: check_trace_svg.py CHORUS_TRACE_SVG EXAMPLE_01"""
import json
import os
import subprocess
import sys
import tempfile
import xml.dom.minidom

tool, example = sys.argv[1], sys.argv[2]
EPS = 1e-3


def group(dom, name):
    found = [g for g in dom.getElementsByTagName('g') if g.getAttribute('class') == name]
    assert len(found) == 1, (name, len(found))
    return found[0]


def box(rect):
    x, y = float(rect.getAttribute('x')), float(rect.getAttribute('y'))
    return x, y, x + float(rect.getAttribute('width')), y + float(rect.getAttribute('height'))


def inside(point, b):
    return b[0] - EPS <= point[0] <= b[2] + EPS and b[1] - EPS <= point[1] <= b[3] + EPS


def check_picture(trace_path, svg_path, algo):
    events = json.load(open(trace_path))['traceEvents']
    slices = [e for e in events if e['ph'] == 'X']
    starts = {e['id']: e for e in events if e['ph'] == 's'}
    finishes = {e['id']: e for e in events if e['ph'] == 'f'}
    assert starts and set(starts) == set(finishes), (algo, len(starts), len(finishes))
    if algo == 'ring':  # 4 ranks x (one all_reduce + 3 rounds x 2 phases x (send + receive))
        assert len(slices) == 4 * 13 and len(starts) == 24, (len(slices), len(starts))

    dom = xml.dom.minidom.parse(svg_path)
    rects = group(dom, 'slices').getElementsByTagName('rect')
    assert len(rects) == len(slices), (algo, len(rects), len(slices))
    arrows = [p for p in group(dom, 'flows').getElementsByTagName('path') if p.getAttribute('marker-end')]
    assert len(arrows) == len(starts), (algo, len(arrows), len(starts))
    labels = [t.firstChild.data for t in group(dom, 'tracks').getElementsByTagName('text')]
    assert labels == ['rank 0', 'rank 1', 'rank 2', 'rank 3'], labels

    # The rects come track by track, each track's slices by start time, outer first: pair them with the
    # JSON's slices sorted the same way, then check the geometry against the times.
    ordered = sorted(slices, key=lambda e: (e['tid'], e['ts'], -e['dur']))
    by_rect = list(zip(ordered, [box(r) for r in rects]))
    for rect, event in zip(rects, ordered):
        tip = rect.getElementsByTagName('title')[0].firstChild.data
        assert tip.startswith(event['name'] + ' (' + event['cat'] + ')'), (tip, event)
    calls = [(e, b) for e, b in by_rect if e['cat'] == 'collective']
    steps = [(e, b) for e, b in by_rect if e['cat'] == 'step']
    assert len(calls) == 4 and len(steps) == len(slices) - 4
    for event, b in steps:
        call = [cb for ce, cb in calls if ce['tid'] == event['tid']][0]
        assert call[0] - EPS <= b[0] and b[2] <= call[2] + 0.75 + EPS, ('step outside its call', event)
        assert b[1] > call[3] - EPS, ('step not in the row under its call', event)

    # Each arrow: from the send's rect on the sender's track to the receive's rect on the receiver's.
    def slice_at(tid, ts, kinds):
        return [b for e, b in steps if e['tid'] == tid and e['name'] in kinds and e['ts'] <= ts <= e['ts'] + e['dur']]
    for arrow in arrows:
        path = arrow.getAttribute('d').replace('M', '').replace('C', '').split()
        begin = tuple(float(v) for v in path[0].split(','))
        end = tuple(float(v) for v in path[-1].split(','))
        matched = False
        for fid, s in starts.items():
            f = finishes[fid]
            sends = slice_at(s['tid'], s['ts'], {'send'})
            recvs = slice_at(f['tid'], f['ts'], {'recv', 'recv+reduce'})
            if any(inside(begin, b) for b in sends) and any(inside(end, b) for b in recvs):
                matched = True
                break
        assert matched, ('arrow joins no send and receive', arrow.getAttribute('d'))


def expect_error(args, text, stdin=None):
    run = subprocess.run([tool] + args, capture_output=True, text=True)
    assert run.returncode == 2, (args, run.returncode, run.stderr)
    assert 'chorus-trace-svg: error: ' in run.stderr and text in run.stderr, (args, run.stderr)


with tempfile.TemporaryDirectory() as tmp:
    for algo in ['ring', 'tree']:
        trace = os.path.join(tmp, algo + '.json')
        picture = os.path.join(tmp, algo + '.svg')
        subprocess.run([example, '--algo', algo, '--trace', trace], check=True, capture_output=True)
        subprocess.run([tool, trace, '-o', picture, '--title', algo + ' all_reduce'], check=True)
        check_picture(trace, picture, algo)
        # Zoomed in: the same elements, clipped to the plot; the axis starts at the window.
        subprocess.run([tool, trace, '-o', picture, '--from', '10', '--to', '30'], check=True)
        dom = xml.dom.minidom.parse(picture)
        assert len(group(dom, 'slices').getElementsByTagName('rect')) == len(json.load(open(trace))['traceEvents']) - \
            sum(1 for e in json.load(open(trace))['traceEvents'] if e['ph'] != 'X')
        assert group(dom, 'slices').getAttribute('clip-path') == 'url(#plot)'
        ticks = [t.firstChild.data for t in group(dom, 'axis').getElementsByTagName('text')]
        values = [float(t.split()[0]) for t in ticks]
        assert all(t.endswith(' \u00b5s') for t in ticks) and values[0] == 10 and 28 <= values[-1] <= 30, ticks

    def bad_file(name, content):
        path = os.path.join(tmp, name)
        with open(path, 'w') as f:
            f.write(content if isinstance(content, str) else json.dumps(content))
        return path

    out = os.path.join(tmp, 'bad.svg')
    x = lambda tid, ts, dur, name='s': {'ph': 'X', 'pid': 0, 'tid': tid, 'ts': ts, 'dur': dur, 'name': name}
    expect_error([bad_file('a.json', '{"traceEvents": [ '), '-o', out], 'is not JSON')
    expect_error([bad_file('b.json', {'events': []}), '-o', out], 'no "traceEvents" array')
    expect_error([bad_file('c.json', {'traceEvents': []}), '-o', out], 'no slices')
    expect_error([bad_file('d.json', [{'ph': 'E', 'pid': 0, 'tid': 1, 'ts': 3}]), '-o', out], 'trace event 0: "E" on pid 0 tid 1')
    expect_error([bad_file('e.json', [{'ph': 'B', 'tid': 0, 'ts': 3, 'name': 'open'}]), '-o', out], '"B" "open" never ends')
    expect_error([bad_file('f.json', [x(0, 0, 10, 'outer'), x(0, 5, 10, 'across')]), '-o', out],
                 'slice "across" (5000 to 15000 ns) overlaps "outer"')
    expect_error([bad_file('g.json', [x(0, 0, 10), {'ph': 's', 'tid': 0, 'ts': 1, 'id': 7}]), '-o', out],
                 'starts but never finishes')
    expect_error([bad_file('h.json', [x(0, 0, 10), {'ph': 's', 'tid': 0, 'ts': 1, 'id': 7},
                                      {'ph': 'f', 'bp': 'e', 'tid': 1, 'ts': 2, 'id': 7}]), '-o', out],
                 "the flow's finish is in no slice")
    expect_error([bad_file('i.json', [x(0, 0, -1)]), '-o', out], '"dur" is negative')
    expect_error([bad_file('j.json', [{'ph': 'X', 'tid': 0, 'ts': 'soon', 'dur': 1}]), '-o', out], '"ts" must be a number')
    expect_error([os.path.join(tmp, 'missing.json'), '-o', out], 'cannot open')
    expect_error([bad_file('k.json', [x(0, 0, 1)]), '-o', os.path.join(tmp, 'no-such-dir', 'out.svg')], 'cannot write')
    expect_error([bad_file('l.json', [x(0, 0, 1)])], 'output')
    expect_error([bad_file('m.json', [x(0, 0, 1)]), '-o', out, '--width', '10'], '--width')
    expect_error([bad_file('o.json', [x(0, 0, 1)]), '-o', out, '--from', '5', '--to', '5'], 'must come after --from 5')
    expect_error([bad_file('p.json', [x(0, 0, 1)]), '-o', out, '--from', '5'], '--from needs --to')
    assert not os.path.exists(out), 'a failed run must not leave a picture'

    # B/E pairs nest like X slices; "f" without "bp": "e" binds to the next slice on its track.
    subprocess.run([tool, bad_file('n.json', [{'ph': 'B', 'tid': 0, 'ts': 0, 'name': 'outer'},
                                              {'ph': 'B', 'tid': 0, 'ts': 1, 'name': 'inner'},
                                              {'ph': 'E', 'tid': 0, 'ts': 2}, {'ph': 'E', 'tid': 0, 'ts': 9},
                                              {'ph': 's', 'tid': 0, 'ts': 1.5, 'id': 'a'},
                                              {'ph': 'f', 'tid': 1, 'ts': 4, 'id': 'a'}, x(1, 6, 2, 'later')]),
                    '-o', out], check=True)
    dom = xml.dom.minidom.parse(out)
    rects = [box(r) for r in group(dom, 'slices').getElementsByTagName('rect')]
    assert len(rects) == 3 and rects[1][1] > rects[0][1] and rects[2][1] > rects[0][3], rects
    arrow = group(dom, 'flows').getElementsByTagName('path')[0].getAttribute('d').split()
    end = tuple(float(v) for v in arrow[-1].split(','))
    assert inside(end, rects[2]) and abs(end[0] - rects[2][0]) < EPS, (end, rects[2])
print('ok')
