# bench/chorus-compare end to end at tiny sizes (run by bench/meson.build under MPI): the table, the
# JSON and the SVG agree with each other, every ratio is the division of the two measured times it
# stands for, every median is one of the samples, the spread beside it is its samples' max/min and a
# ratio they cannot support is marked, the calls per sample follow the rule (-n exact; without it at
# least 20, chosen by --min-time, the same on every rank) and bad arguments exit 2 before anything runs.
# The shm line (chorus-bench --backend shm under chorus-run) is a peer like the others, with its own
# ratios to MPI (shm_ratio, recomputed here from the medians); --no-shm gives the table and JSON without it.
# The SVG has the memory-bandwidth limit the table reports, dotted; as root, chorus-compare starts mpirun itself.
#   python3 check_chorus_compare.py COMPARE CHORUS_BENCH MPI_PEER MEMBW PLOT MPIRUN [CHORUS_RUN]
# CHORUS_RUN defaults to chorus-run beside CHORUS_BENCH (both are built in build/bench), and must exist.
import json, math, os, subprocess, sys, tempfile, xml.dom.minidom

compare, chorus_bench, mpi_peer, membw, plot, mpirun = sys.argv[1:7]
chorus_run = sys.argv[7] if len(sys.argv) > 7 else os.path.join(os.path.dirname(chorus_bench), 'chorus-run')
assert os.access(chorus_run, os.X_OK), 'no chorus-run at %s: build it (ninja -C build bench/chorus-run)' % chorus_run
# Without --chorus-run: chorus-compare finds the launcher beside chorus-bench by itself.
found_tools = ['--chorus-bench', chorus_bench, '--mpi-peer', mpi_peer, '--membw', membw, '--plot', plot,
               '--mpirun', mpirun]
tools = found_tools + ['--chorus-run', chorus_run]
tiny = ['--ranks', '2', '--sizes', '8,1K:4K:4', '--repeats', '3', '-n', '3', '-w', '1', '--membw-size', '256K',
        '--membw-repeats', '1']
# The test machine may have fewer cores than ranks; the test is about the outputs, not the speed.
oversubscribed = ['--mpi', 'MPI_Allreduce=--oversubscribe --bind-to none']


# chorus-compare runs as a user would start it: without the variables that let Open MPI's mpirun run as
# root (meson sets them for the suite). Run as root, as CI is, it must set them for its tools itself.
user_env = {k: v for k, v in os.environ.items() if not k.startswith('OMPI_ALLOW_RUN_AS_ROOT')}


def run(*args, given=tools):
    return subprocess.run([sys.executable, compare] + given + list(args), capture_output=True, text=True, timeout=600,
                          env=user_env)


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)


def check_ratios(row, key, mine, theirs, placement, max_spread=1.25):
    """row[key + 'ratio'][theirs] is mine's median time / theirs', its range the repeats' extremes."""
    m, t = row['peers'][mine][placement], row['peers'][theirs][placement]
    ratio = row[key + 'ratio'][theirs][placement]
    assert ratio > 0 and close(ratio, m['time_us'] / t['time_us']), (key, mine, theirs, row)
    low, high = row[key + 'ratio_range'][theirs][placement]
    assert close(low, m['min_us'] / t['max_us']) and close(high, m['max_us'] / t['min_us']), (key, row)
    assert low <= ratio <= high, (key, row)
    assert row[key + 'supported'][theirs][placement] == (high / low <= max_spread), (key, row)


with tempfile.TemporaryDirectory() as tmp:
    out_json, out_svg = os.path.join(tmp, 'c.json'), os.path.join(tmp, 'c.svg')
    for shm in (True, False):
        done = run(*tiny, *oversubscribed, '-J', out_json, '--svg', out_svg, *([] if shm else ['--no-shm']))
        assert done.returncode == 0, (shm, done.returncode, done.stdout, done.stderr)
        doc = json.load(open(out_json))
        peers = ['chorus', 'shm', 'MPI_Allreduce'] if shm else ['chorus', 'MPI_Allreduce']
        assert doc['peers'] == peers and doc['wrong'] == 0 and doc['repeats'] == 3, doc['peers']
        assert doc['chorus_run'] == (chorus_run if shm else None), doc['chorus_run']
        assert doc['load_average']['start'] is None or len(doc['load_average']['start']) == 3
        assert doc['mpi_settings'] == {'MPI_Allreduce': {'2': ['--oversubscribe', '--bind-to', 'none']}}, \
            doc['mpi_settings']
        [run2] = doc['runs']
        assert run2['ranks'] == 2 and [r['size'] for r in run2['rows']] == [8, 1024, 4096], run2['rows']
        m = run2['membw']
        assert len(m['samples']) == 3 and all(s['threads'] == 2 and s['bytes_per_buffer'] == 256 * 1024
                                              for s in m['samples'])
        per_thread_copy, per_thread_reduce = m['copy_written_gbps'] / 2, m['reduce_written_gbps'] / 2
        assert close(m['busbw_limit_gbps'], 2 / (1 / per_thread_copy + 1 / per_thread_reduce)), m
        table = [line.split() for line in done.stdout.splitlines() if line and not line.startswith('#')]
        assert len(table) == 3, done.stdout
        [head] = [line.split() for line in done.stdout.splitlines() if line.startswith('#  size(B)')]
        if shm:
            assert head == ['#', 'size(B)', 'chorus(us)', 'max/min', 'shm(us)', 'max/min', 'MPI_Allreduce(us)',
                            'max/min', 'chorus/shm', 'chorus/MPI_Allreduce', 'shm/MPI_Allreduce', 'chorus',
                            'busbw', 'shm', 'busbw', 'MPI_Allreduce', 'busbw', 'chorus/limit', 'shm/limit'], head
        else:
            assert head == ['#', 'size(B)', 'chorus(us)', 'max/min', 'MPI_Allreduce(us)', 'max/min',
                            'chorus/MPI_Allreduce', 'chorus', 'busbw', 'MPI_Allreduce', 'busbw', 'chorus/limit'], head
        for row, cells in zip(run2['rows'], table):
            assert int(cells[0]) == row['size'], (cells, row['size'])
            assert set(row['peers']) == set(peers), row['peers']
            for placement in ('out_of_place', 'in_place'):
                for peer in peers:
                    figure = row['peers'][peer][placement]
                    samples = figure['samples_us']
                    # Nearest-rank median of 3: the middle sample, measured, with its own busbw.
                    assert len(samples) == 3 and figure['time_us'] == sorted(samples)[1], (peer, figure)
                    assert figure['wrong'] == 0 and figure['time_us'] > 0 and figure['busbw_gbps'] > 0, figure
                    # The spread: the samples' extremes and their ratio; -n 3 made exactly 3 calls per sample.
                    assert figure['min_us'] == min(samples) and figure['max_us'] == max(samples), figure
                    assert close(figure['spread'], max(samples) / min(samples)), figure
                    assert figure['samples_iters'] == [3, 3, 3], (peer, figure)
                    assert figure['samples_loops'] == [1, 1, 1], (peer, figure)  # -n: one loop
                # chorus (host) / every other peer, shm included; shm / every MPI variant.
                assert sorted(row['ratio']) == sorted(peers[1:]), row['ratio']
                for peer in peers[1:]:
                    check_ratios(row, '', 'chorus', peer, placement)
                assert close(row['limit_fraction'][placement],
                             row['peers']['chorus'][placement]['busbw_gbps'] / m['busbw_limit_gbps']), row
                if shm:
                    assert list(row['shm_ratio']) == ['MPI_Allreduce'], row['shm_ratio']
                    check_ratios(row, 'shm_', 'shm', 'MPI_Allreduce', placement)
                    assert row['shm_limit_fraction'][placement] > 0 and close(
                        row['shm_limit_fraction'][placement],
                        row['peers']['shm'][placement]['busbw_gbps'] / m['busbw_limit_gbps']), row
                else:
                    assert not [k for k in row if k.startswith('shm')], list(row)
            # The table (out of place): size, then each peer's us and max/min, the ratios (marked * when
            # unsupported, with a note under the table), the busbw of chorus, shm and MPI, and the limits.
            oop = {p: row['peers'][p]['out_of_place'] for p in peers}

            def ratio_cell(key, peer):
                return '%.3f' % row[key + 'ratio'][peer]['out_of_place'] + \
                    ('' if row[key + 'supported'][peer]['out_of_place'] else '*')
            expected = [c for p in peers for c in ('%.2f' % oop[p]['time_us'], '%.2f' % oop[p]['spread'])]
            expected += [ratio_cell('', p) for p in peers[1:]] + ([ratio_cell('shm_', 'MPI_Allreduce')] if shm else [])
            expected += ['%.3f' % oop[p]['busbw_gbps'] for p in peers]
            expected += ['%.3f' % row['limit_fraction']['out_of_place']]
            expected += ['%.3f' % row['shm_limit_fraction']['out_of_place']] if shm else []
            assert cells[1:] == expected, (shm, cells, expected)
            assert '*' not in ''.join(cells) or '# *: the repeats cannot support this ratio' in done.stdout, \
                done.stdout
        assert '# timed calls per sample: -n 3 (exact), warm-up -w 1' in done.stdout, done.stdout
        assert doc['iters'] == 3 and doc['warmup'] == 1 and doc['min_time'] is None and doc['max_spread'] == 1.25, doc
        # Every sample of the 4 KiB chorus row is a chorus-bench row's time: the busbw of the chosen one is
        # the factor 2(n-1)/n = 1 times size / time, as chorus-bench computed it; the same for shm.
        for peer in peers[:-1]:
            r4k = run2['rows'][2]['peers'][peer]['out_of_place']
            assert close(r4k['busbw_gbps'], 4096 / (r4k['time_us'] * 1e-6) / 1e9), (peer, r4k)
        dom = xml.dom.minidom.parse(out_svg)
        lines = dom.getElementsByTagName('polyline')
        assert len(lines) == len(peers) + 1 and all(l.getAttribute('points').count(',') == 3 for l in lines), len(lines)
        legend = [t.firstChild.data for t in dom.getElementsByTagName('text') if t.firstChild]
        assert 'chorus host automatic, 2 ranks' in legend and 'Open MPI MPI_Allreduce, 2 ranks' in legend, legend
        # The memory-bandwidth limit the table reports, dotted and flat: every point at the same height.
        [limit] = [l for l in lines if l.getAttribute('class') == 'limit']
        assert limit.getAttribute('stroke-dasharray') == '2,3', limit.toxml()
        assert len({p.split(',')[1] for p in limit.getAttribute('points').split()}) == 1, limit.toxml()
        assert 'memory-bandwidth limit, 2 ranks' in legend, legend
        assert ('chorus shm, 2 ranks' in legend) == shm, legend

    # --predict adds a dashed line (the host backend's prediction; the shm line has none); in-place picks the
    # other placement for the table. Without --chorus-run the launcher beside chorus-bench is used.
    done = run('--ranks', '2', '--sizes', '4K', '--repeats', '1', '-n', '2', '-w', '0', '--membw-size', '64K',
               '--membw-repeats', '1', *oversubscribed, '--predict', '--placement', 'in_place', '--svg', out_svg,
               '-J', out_json, given=found_tools)
    assert done.returncode == 0, done.stderr
    doc = json.load(open(out_json))
    assert doc['peers'] == ['chorus', 'shm', 'MPI_Allreduce'] and os.path.samefile(doc['chorus_run'], chorus_run), doc
    row = doc['runs'][0]['rows'][0]
    assert row['predicted']['busbw_gbps'] > 0, row
    [cells] = [l.split() for l in done.stdout.splitlines() if l and not l.startswith('#')]
    assert cells[1] == '%.2f' % row['peers']['chorus']['in_place']['time_us'], (cells, row)
    assert cells[3] == '%.2f' % row['peers']['shm']['in_place']['time_us'], (cells, row)
    # One repeat: every ratio supported, none marked.
    assert cells[7:10] == ['%.3f' % row['ratio']['shm']['in_place'], '%.3f' % row['ratio']['MPI_Allreduce']['in_place'],
                           '%.3f' % row['shm_ratio']['MPI_Allreduce']['in_place']], (cells, row)
    assert cells[14] == '%.3f' % row['shm_limit_fraction']['in_place'], (cells, row)
    dom = xml.dom.minidom.parse(out_svg)
    predicted = [l for l in dom.getElementsByTagName('polyline') if l.getAttribute('class') == 'predicted']
    assert len(predicted) == 1 and predicted[0].getAttribute('stroke-dasharray') == '6,4', len(predicted)
    assert len(dom.getElementsByTagName('polyline')) == 5, dom.getElementsByTagName('polyline')

    # Without -n the counts are chosen by time: a tiny --min-time gives the least, 20 calls, on both tools
    # (every rank agreed, or chorus-mpi-peer would have hung); a longer one gives more at a small size.
    done = run('--ranks', '2', '--sizes', '8,4K', '--repeats', '2', '--min-time', '1us', '--membw-size', '64K',
               '--membw-repeats', '1', *oversubscribed, '-J', out_json, '--timeout', '120', '--max-spread', '1')
    assert done.returncode == 0, done.stderr
    doc = json.load(open(out_json))
    assert doc['iters'] is None and doc['min_time'] == '1us', doc
    for row in doc['runs'][0]['rows']:
        for peer in doc['peers']:
            for placement in ('out_of_place', 'in_place'):
                assert row['peers'][peer][placement]['samples_iters'] == [20, 20], (peer, row)
                assert row['peers'][peer][placement]['samples_loops'] == [1, 1], (peer, row)
    # --max-spread 1: any two repeats that differ at all leave the ratio unsupported, marked in the table.
    table = [line.split() for line in done.stdout.splitlines() if line and not line.startswith('#')]
    for row, cells in zip(doc['runs'][0]['rows'], table):
        for cell, key, peer in [(cells[7], '', 'shm'), (cells[8], '', 'MPI_Allreduce'),
                                (cells[9], 'shm_', 'MPI_Allreduce')]:
            low, high = row[key + 'ratio_range'][peer]['out_of_place']
            assert cell.endswith('*') == (high > low) == (not row[key + 'supported'][peer]['out_of_place']), cells
    assert '# *: the repeats cannot support this ratio' in done.stdout, done.stdout
    assert 'chosen by time (--min-time 1us, at least 20, the median of up to 20 loops): chorus 20 to 20, shm 20 to 20, MPI_Allreduce 20 to 20' \
        in done.stdout, done.stdout
    done = run('--ranks', '2', '--sizes', '8', '--repeats', '1', '--min-time', '5ms', '--membw-size', '64K',
               '--membw-repeats', '1', *oversubscribed, '-J', out_json, '--timeout', '120')
    assert done.returncode == 0, done.stderr
    row = json.load(open(out_json))['runs'][0]['rows'][0]
    # About 5 ms of calls, at least 20. Unbound MPI processes on a busy machine may take a scheduler tick
    # (4 ms) per call, and then 20 it is; the host backend's threads are far faster than 250 us a call.
    assert row['peers']['MPI_Allreduce']['out_of_place']['samples_iters'][0] >= 20, row
    assert row['peers']['shm']['out_of_place']['samples_iters'][0] >= 20, row
    assert row['peers']['chorus']['out_of_place']['samples_iters'][0] > 20, row
    # ... timed in loops of at least 20 calls each (all 20 loops from 400 calls on).
    for peer in ('chorus', 'shm', 'MPI_Allreduce'):
        at = row['peers'][peer]['out_of_place']
        made, loops = at['samples_iters'][0], at['samples_loops'][0]
        assert 1 <= loops <= 20 and made % loops == 0 and made // loops >= 20 and (loops == 20 or made < 420), (peer, row)

    # chorus-bench's MPI backends choose by time too, every process the same counts (or they would hang).
    for backend in ('mpi', 'mpi-native'):
        done = subprocess.run([mpirun, '-np', '2', '--oversubscribe', '--bind-to', 'none', chorus_bench, '--backend',
                               backend, '-b', '8', '-e', '1K', '-f', '32', '--min-time', '2ms', '-J', out_json],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (backend, done.stdout, done.stderr)
        doc = json.load(open(out_json))
        assert doc['iters'] is None and doc['min_time_s'] == 0.002, doc
        for row in doc['rows']:
            for placement in ('out_of_place', 'in_place'):
                assert row[placement]['iters'] >= 20 and row[placement]['warmup'] >= 5, row
                at = row[placement]  # the median loop's time, every loop's in the JSON
                assert len(at['loops_us']) == at['loops'] and at['iters'] % at['loops'] == 0, at
                assert close(at['time_us'], sorted(at['loops_us'])[(at['loops'] + 1) // 2 - 1]), at
        table = [l.split() for l in done.stdout.splitlines() if l and not l.startswith('#')]
        assert [[int(c) for c in cells[-2:]] for cells in table] == [
            [r['out_of_place']['iters'], r['in_place']['iters']] for r in doc['rows']], (table, doc['rows'])

    # A tool that fails makes the comparison fail (status 1), with the tool's words.
    done = run('--ranks', '2', '--sizes', '8', '--repeats', '1', '--membw-size', '64K', '--membw-repeats', '1',
               '--mpi', 'broken=--oversubscribe --mca pml no_such_pml')
    assert done.returncode == 1 and 'chorus-mpi-peer exited with status' in done.stderr, (done.returncode, done.stderr)
    # ... the shm line's too (a launcher that fails), and --no-shm does not run it.
    failing = ['--ranks', '2', '--sizes', '8', '--repeats', '1', '--membw-size', '64K', '--membw-repeats', '1',
               *oversubscribed, '--chorus-run', '/bin/false']
    done = run(*failing, given=found_tools)
    assert done.returncode == 1 and 'chorus-bench --backend shm exited with status 1' in done.stderr, \
        (done.returncode, done.stderr)
    done = run(*failing, '--no-shm', given=found_tools)
    assert done.returncode == 0 and 'shm' not in done.stdout, (done.returncode, done.stdout, done.stderr)
    # No chorus-run beside chorus-bench, none named: no shm line, and no error.
    os.symlink(os.path.abspath(chorus_bench), os.path.join(tmp, 'chorus-bench'))
    alone = [os.path.join(tmp, 'chorus-bench') if t == chorus_bench else t for t in found_tools]
    done = run('--ranks', '2', '--sizes', '8', '--repeats', '1', '-n', '2', '--membw-size', '64K', '--membw-repeats',
               '1', *oversubscribed, '-J', out_json, given=alone)
    assert done.returncode == 0, (done.returncode, done.stderr)
    doc = json.load(open(out_json))
    assert doc['peers'] == ['chorus', 'MPI_Allreduce'] and doc['chorus_run'] is None, doc

    # Usage errors: status 2, the reason on stderr, nothing measured.
    bad_args = [['--ranks', '1'], ['--ranks', 'x'], ['--ranks', '2,300'], ['--sizes', '1.5K'], ['--sizes', '64:8:4'],
                ['--sizes', '8:64:1'], ['--sizes', '8:64'], ['--sizes', '0:64:2'], ['--repeats', '0'], ['-n', '0'],
                ['-w', '-1'], ['--min-time', '5 ms'], ['--min-time', 'x'], ['--max-spread', '0.5'], ['-o', 'avg'], ['--placement', 'sideways'], ['--collective', 'gather'],
                ['--mpi', 'no-equals-sign'], ['--mpi', 'a=', '--mpi', 'a=--oversubscribe'], ['--mpi', 'shm=-np 2'],
                ['--mpi', 'chorus=--bind-to none'], ['--chorus-run', '/nonexistent-dir/chorus-run'],
                ['-J', '/nonexistent-dir/out.json'], ['--svg', '/nonexistent-dir/out.svg'],
                ['--membw-size', '2'], ['--no-such-flag']]
    for bad in bad_args:
        done = run(*tiny, *bad)
        assert done.returncode == 2 and 'error: ' in done.stderr and done.stdout == '', (bad, done.returncode,
                                                                                      done.stdout, done.stderr)
    done = subprocess.run([sys.executable, compare, '--mpi-peer', '/nonexistent-dir/peer'], capture_output=True,
                          text=True)
    assert done.returncode == 2 and 'no such executable' in done.stderr, done.stderr
    done = run(*tiny, '--chorus-run', '/nonexistent-dir/chorus-run')
    assert done.returncode == 2 and '--chorus-run /nonexistent-dir/chorus-run: no such executable' in done.stderr, \
        done.stderr
print('ok')
