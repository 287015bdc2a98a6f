# chorus-plot: a line per series, solid, dashed (predicted) or dotted (limit) as asked; malformed input is
# refused with status 2 and the reason.
#   usage: check_chorus_plot.py CHORUS_PLOT
import json, os, subprocess, sys, tempfile, xml.dom.minidom
tool = sys.argv[1]
with tempfile.TemporaryDirectory() as tmp:
    def plot(doc):
        spec, svg = os.path.join(tmp, 'in.json'), os.path.join(tmp, 'out.svg')
        open(spec, 'w').write(doc if isinstance(doc, str) else json.dumps(doc))
        return subprocess.run([tool, spec, '--svg', svg], capture_output=True, text=True), svg
    done, svg = plot({'title': 't', 'series': [{'name': 'a', 'points': [[8, 0.1], [1024, 2.0], [0, 1.0]]},
                                              {'name': 'b', 'dashed': True, 'points': [[8, 0.2], [1024, 1.0]]},
                                              {'name': 'c', 'line': 'limit', 'points': [[8, 3.0], [1024, 3.0]]},
                                              {'name': 'd', 'line': 'predicted', 'points': [[8, 0.3]]}]})
    assert done.returncode == 0, done.stderr
    lines = xml.dom.minidom.parse(svg).getElementsByTagName('polyline')
    assert [l.getAttribute('stroke-dasharray') for l in lines] == ['', '6,4', '2,3', '6,4'], lines
    assert [l.getAttribute('class') for l in lines] == ['measured', 'predicted', 'limit', 'predicted'], lines
    assert lines[0].getAttribute('points').count(',') == 2  # the 0-byte point has no place on a log axis
    for bad in ['not json', {'series': [{'name': 'a', 'points': [[8, -1.0]]}]}, {'series': [{'points': []}]},
                {'title': 't'}, {'series': [{'name': 'a', 'points': [['x', 1.0]]}]},
                {'series': [{'name': 'a', 'line': 'dotted', 'points': [[8, 1.0]]}]}]:
        done, _ = plot(bad)
        assert done.returncode == 2 and 'chorus-plot: error: ' in done.stderr, (bad, done.returncode, done.stderr)
print('ok')
