# bench/chorus-compare end to end at tiny sizes (run by bench/meson.build under MPI): the table, the
# JSON and the SVG agree with each other, every ratio is the division of the two measured times it
# stands for, every median is one of the samples, and bad arguments exit 2 before anything runs.
#   python3 check_chorus_compare.py COMPARE CHORUS_BENCH MPI_PEER MEMBW PLOT MPIRUN
import json, math, os, subprocess, sys, tempfile, xml.dom.minidom

compare, chorus_bench, mpi_peer, membw, plot, mpirun = sys.argv[1:7]
tools = ['--chorus-bench', chorus_bench, '--mpi-peer', mpi_peer, '--membw', membw, '--plot', plot, '--mpirun', mpirun]
tiny = ['--ranks', '2', '--sizes', '8,1K:4K:4', '--repeats', '3', '-n', '3', '-w', '1', '--membw-size', '256K',
        '--membw-repeats', '1']
# The test machine may have fewer cores than ranks; the test is about the outputs, not the speed.
oversubscribed = ['--mpi', 'MPI_Allreduce=--oversubscribe --bind-to none']


def run(*args):
    return subprocess.run([sys.executable, compare] + tools + list(args), capture_output=True, text=True, timeout=600)


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)


with tempfile.TemporaryDirectory() as tmp:
    out_json, out_svg = os.path.join(tmp, 'c.json'), os.path.join(tmp, 'c.svg')
    done = run(*tiny, *oversubscribed, '-J', out_json, '--svg', out_svg)
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    doc = json.load(open(out_json))
    assert doc['peers'] == ['chorus', 'MPI_Allreduce'] and doc['wrong'] == 0 and doc['repeats'] == 3, doc['peers']
    assert doc['load_average']['start'] is None or len(doc['load_average']['start']) == 3
    assert doc['mpi_settings'] == {'MPI_Allreduce': {'2': ['--oversubscribe', '--bind-to', 'none']}}, doc['mpi_settings']
    [run2] = doc['runs']
    assert run2['ranks'] == 2 and [r['size'] for r in run2['rows']] == [8, 1024, 4096], run2['rows']
    m = run2['membw']
    assert len(m['samples']) == 3 and all(s['threads'] == 2 and s['bytes_per_buffer'] == 256 * 1024 for s in m['samples'])
    per_thread_copy, per_thread_reduce = m['copy_written_gbps'] / 2, m['reduce_written_gbps'] / 2
    assert close(m['busbw_limit_gbps'], 2 / (1 / per_thread_copy + 1 / per_thread_reduce)), m
    table = [line.split() for line in done.stdout.splitlines() if line and not line.startswith('#')]
    assert len(table) == 3, done.stdout
    for row, cells in zip(run2['rows'], table):
        assert int(cells[0]) == row['size'], (cells, row['size'])
        for placement in ('out_of_place', 'in_place'):
            for peer in doc['peers']:
                figure = row['peers'][peer][placement]
                samples = figure['samples_us']
                # Nearest-rank median of 3: the middle sample, measured, with its own busbw.
                assert len(samples) == 3 and figure['time_us'] == sorted(samples)[1], (peer, figure)
                assert figure['wrong'] == 0 and figure['busbw_gbps'] > 0, figure
            chorus_t = row['peers']['chorus'][placement]['time_us']
            mpi_t = row['peers']['MPI_Allreduce'][placement]['time_us']
            assert close(row['ratio']['MPI_Allreduce'][placement], chorus_t / mpi_t), (row, placement)
            assert close(row['limit_fraction'][placement],
                         row['peers']['chorus'][placement]['busbw_gbps'] / m['busbw_limit_gbps']), row
        # The table (out of place): size, chorus us, MPI us, ratio, chorus busbw, MPI busbw, chorus/limit.
        oop = row['peers']
        assert cells[1:4] == ['%.2f' % oop['chorus']['out_of_place']['time_us'],
                              '%.2f' % oop['MPI_Allreduce']['out_of_place']['time_us'],
                              '%.3f' % row['ratio']['MPI_Allreduce']['out_of_place']], (cells, row)
        assert cells[6] == '%.3f' % row['limit_fraction']['out_of_place'], cells
    # Every sample of the 4 KiB chorus row is a chorus-bench row's time: the busbw of the chosen one is
    # the factor 2(n-1)/n = 1 times size / time, as chorus-bench computed it.
    r4k = run2['rows'][2]['peers']['chorus']['out_of_place']
    assert close(r4k['busbw_gbps'], 4096 / (r4k['time_us'] * 1e-6) / 1e9), r4k
    dom = xml.dom.minidom.parse(out_svg)
    lines = dom.getElementsByTagName('polyline')
    assert len(lines) == 2 and all(l.getAttribute('points').count(',') == 3 for l in lines), len(lines)
    legend = [t.firstChild.data for t in dom.getElementsByTagName('text') if t.firstChild]
    assert 'chorus host automatic, 2 ranks' in legend and 'Open MPI MPI_Allreduce, 2 ranks' in legend, legend

    # --predict adds a dashed line; in-place picks the other placement for the table.
    done = run('--ranks', '2', '--sizes', '4K', '--repeats', '1', '-n', '2', '-w', '0', '--membw-size', '64K',
               '--membw-repeats', '1', *oversubscribed, '--predict', '--placement', 'in_place', '--svg', out_svg,
               '-J', out_json)
    assert done.returncode == 0, done.stderr
    doc = json.load(open(out_json))
    row = doc['runs'][0]['rows'][0]
    assert row['predicted']['busbw_gbps'] > 0, row
    [cells] = [l.split() for l in done.stdout.splitlines() if l and not l.startswith('#')]
    assert cells[1] == '%.2f' % row['peers']['chorus']['in_place']['time_us'], (cells, row)
    dashed = [l for l in xml.dom.minidom.parse(out_svg).getElementsByTagName('polyline')
              if l.getAttribute('stroke-dasharray')]
    assert len(dashed) == 1, len(dashed)

    # A tool that fails makes the comparison fail (status 1), with the tool's words.
    done = run('--ranks', '2', '--sizes', '8', '--repeats', '1', '--membw-size', '64K', '--membw-repeats', '1',
               '--mpi', 'broken=--oversubscribe --mca pml no_such_pml')
    assert done.returncode == 1 and 'chorus-mpi-peer exited with status' in done.stderr, (done.returncode, done.stderr)

    # Usage errors: status 2, the reason on stderr, nothing measured.
    bad_args = [['--ranks', '1'], ['--ranks', 'x'], ['--ranks', '2,300'], ['--sizes', '1.5K'], ['--sizes', '64:8:4'],
                ['--sizes', '8:64:1'], ['--sizes', '8:64'], ['--sizes', '0:64:2'], ['--repeats', '0'], ['-n', '0'],
                ['-w', '-1'], ['-o', 'avg'], ['--placement', 'sideways'], ['--collective', 'gather'],
                ['--mpi', 'no-equals-sign'], ['--mpi', 'a=', '--mpi', 'a=--oversubscribe'],
                ['-J', '/nonexistent-dir/out.json'], ['--svg', '/nonexistent-dir/out.svg'],
                ['--membw-size', '2'], ['--no-such-flag']]
    for bad in bad_args:
        done = run(*tiny, *bad)
        assert done.returncode == 2 and 'error: ' in done.stderr and done.stdout == '', (bad, done.returncode,
                                                                                      done.stdout, done.stderr)
    done = subprocess.run([sys.executable, compare, '--mpi-peer', '/nonexistent-dir/peer'], capture_output=True,
                          text=True)
    assert done.returncode == 2 and 'no such executable' in done.stderr, done.stderr
print('ok')
