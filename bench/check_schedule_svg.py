# chorus-schedule --svg writes well-formed XML with an arrow per transfer (ring all_reduce, 4 ranks: 2(n-1)
# rounds of n) and a box per pipeline action.
#   usage: check_schedule_svg.py CHORUS_SCHEDULE
import os, subprocess, sys, tempfile, xml.dom.minidom
tool = sys.argv[1]
with tempfile.TemporaryDirectory() as tmp:
    def svg(*args):
        path = os.path.join(tmp, 'out.svg')
        subprocess.run([tool, '--svg', path] + list(args), check=True)
        return xml.dom.minidom.parse(path)
    dom = svg('--collective', 'all_reduce', '--algo', 'ring', '--ranks', '4', '--count', '8')
    arrows = [l for l in dom.getElementsByTagName('line') if l.getAttribute('marker-end')]
    assert len(arrows) == 2 * 3 * 4 + 2, len(arrows)
    assert len(dom.getElementsByTagName('marker')) == 2
    svg('--collective', 'all_reduce', '--algo', 'tree', '--ranks', '5', '--count', '10', '--slice', '2')
    svg('--collective', 'broadcast', '--algo', 'binomial', '--ranks', '6', '--root', '2')
    for name in ['gpipe', '1f1b', 'zb-h1', 'interleaved']:
        dom = svg('--pipeline', name, '--stages', '4', '--microbatches', '8')
        group = [g for g in dom.getElementsByTagName('g') if g.getAttribute('class') == 'actions'][0]
        boxes = group.getElementsByTagName('rect')
        assert len(boxes) == 4 * 8 * (3 if name == 'zb-h1' else 4 if name == 'interleaved' else 2), (name, len(boxes))
print('ok')
