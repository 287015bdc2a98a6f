# chorus-bench's additions, end to end (run by bench/meson.build): --predict's columns and its
# per-machine calibration cache with its version key, --csv and --svg agreeing with the table, and
# the table left exactly nccl-tests' shape when none of them is given; and the rule that counts a sample's
# calls (bench/sample_timing.hpp): -n exact, without it chosen by --min-time and at least 20, shown in two
# more columns and in the JSON.
import csv, json, os, re, subprocess, sys, tempfile, time, xml.dom.minidom

tool = sys.argv[1]
common = ['--ranks', '2', '-b', '1K', '-e', '64K', '-f', '4', '-n', '2', '-w', '1']


def run(*args, env=None):
    done = subprocess.run([tool] + common + list(args), capture_output=True, text=True, env=env)
    assert done.returncode == 0, (args, done.returncode, done.stderr)
    return done


def data_rows(stdout):
    return [line.split() for line in stdout.splitlines() if line.strip() and not line.startswith('#')]


with tempfile.TemporaryDirectory() as tmp:
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, 'cache'))
    cache = os.path.join(tmp, 'cache', 'chorus', 'host-calibration.json')

    # Without the new flags: nccl-tests' 13 columns, no predicted header, nothing on stderr
    # (stderr is a pipe here, so no progress line either), no cache written.
    plain = run(env=env)
    assert all(len(r) == 13 for r in data_rows(plain.stdout)), plain.stdout
    assert 'predicted' not in plain.stdout and plain.stderr == '', plain.stderr
    assert not os.path.exists(cache)

    # --predict: two more columns on every row, calibrated now and cached with a version key.
    first = run('--predict', env=env)
    rows = data_rows(first.stdout)
    assert len(rows) == 4 and all(len(r) == 15 for r in rows), first.stdout
    assert all(float(r[13]) > 0 and float(r[14]) > 0 for r in rows), rows
    assert 'measured now, cached in ' + cache in first.stdout, first.stdout
    doc = json.load(open(cache))
    assert doc['version'] and doc['entries']['2']['beta_GBps'] > 0 and doc['entries']['2']['alpha_us'] >= 0, doc
    # The next run reads the cache and predicts the same numbers.
    second = run('--predict', env=env)
    assert '(cached in ' + cache in second.stdout, second.stdout
    assert [r[13:] for r in data_rows(second.stdout)] == [r[13:] for r in rows]
    # A cache written by another chorus version is measured over.
    doc['version'] = 'some-other-version'
    doc['entries']['2']['beta_GBps'] = 12345.0
    json.dump(doc, open(cache, 'w'))
    third = run('--predict', env=env)
    assert 'measured now' in third.stdout, third.stdout
    assert json.load(open(cache))['version'] != 'some-other-version'
    # A damaged cache is measured over, not an error.
    open(cache, 'w').write('{not json')
    assert 'measured now' in run('--predict', env=env).stdout

    # -n is exact: the JSON says so row by row, and the table keeps nccl-tests' shape (above).
    out_json = os.path.join(tmp, 'n.json')
    untimed = ['--ranks', '2', '-b', '1K', '-e', '64K', '-f', '4', '-w', '1']  # common without -n
    doc_run = subprocess.run([tool] + untimed[:-2] + ['-n', '3', '-w', '2', '-J', out_json], capture_output=True,
                             text=True, env=env)
    assert doc_run.returncode == 0, doc_run.stderr
    doc = json.load(open(out_json))
    assert doc['iters'] == 3 and doc['warmup'] == 2 and doc['min_time_s'] is None, doc
    assert all(r[p]['iters'] == 3 and r[p]['warmup'] == 2 for r in doc['rows'] for p in ('out_of_place', 'in_place'))
    # ... in one loop: nccl-tests' mean of N calls, no loop figures.
    assert all(r[p]['loops'] == 1 and 'loops_us' not in r[p] for r in doc['rows'] for p in ('out_of_place', 'in_place'))
    assert 'warmup iters: 2 iters: 3 ' in doc_run.stdout, doc_run.stdout
    # Without -n (common's -n 2 left out): a tiny --min-time gives the least, 20 calls; the warm-up makes at
    # least -w; the table has two more columns, the counts, matching the JSON.
    for min_time, least in (('1us', 20), ('2ms', 21)):
        done = subprocess.run([tool] + untimed[:2] + ['-b', '8'] + untimed[4:] + ['--min-time', min_time, '-J', out_json],
                              capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
        doc = json.load(open(out_json))
        assert doc['iters'] is None and doc['warmup'] == 1, doc
        assert 'iters: auto' in done.stdout and 'timed calls' in done.stdout, done.stdout
        rows = data_rows(done.stdout)
        assert len(rows) == len(doc['rows']) == 7 and all(len(r) == 15 for r in rows), done.stdout
        for r, j in zip(rows, doc['rows']):
            assert [int(r[13]), int(r[14])] == [j['out_of_place']['iters'], j['in_place']['iters']], (r, j)
            assert all(j[p]['warmup'] >= 1 for p in ('out_of_place', 'in_place')), j
        # The calls are timed in loops of at least 20 calls, at most 20 loops, each loop's figure in the JSON
        # and the row's time the nearest-rank median loop's (bench/sample_timing.hpp).
        for j in doc['rows']:
            for p in ('out_of_place', 'in_place'):
                at = j[p]
                loops = at['loops']
                assert 1 <= loops <= 20 and at['iters'] % loops == 0 and at['iters'] // loops >= 20, at
                assert loops == 20 or at['iters'] < 420, at  # 20 loops from 400 calls on
                assert len(at['loops_us']) == loops, at
                median = sorted(at['loops_us'])[(loops + 1) // 2 - 1]
                assert abs(at['time_us'] - median) <= 1e-9 * median, at
        made = [j[p]['iters'] for j in doc['rows'] for p in ('out_of_place', 'in_place')]
        if least == 20:
            assert made == [20] * 14, made
            assert all(j[p]['loops'] == 1 for j in doc['rows'] for p in ('out_of_place', 'in_place')), doc
        else:
            # 2 ms of 8-byte calls on two threads: more than 20 (a call takes a microsecond or less).
            assert doc['rows'][0]['out_of_place']['iters'] >= least, made
            # ... and with 400 calls or more, 20 loops.
            assert all(j[p]['loops'] == 20 for j in doc['rows'] for p in ('out_of_place', 'in_place')
                       if j[p]['iters'] >= 400), doc
    # --repeats: every sample in the JSON, the row's time the nearest-rank median of them, their max/min in two
    # more columns (after the counts' columns when the counts are chosen by time).
    for timing, columns in ((['-n', '3'], 15), (['--min-time', '1us'], 17)):
        done = subprocess.run([tool] + untimed + timing + ['--repeats', '3', '-J', out_json], capture_output=True,
                              text=True, env=env)
        assert done.returncode == 0, done.stderr
        doc = json.load(open(out_json))
        assert doc['repeats'] == 3 and 'repeats: 3 (median' in done.stdout, done.stdout
        rows = data_rows(done.stdout)
        assert len(rows) == len(doc['rows']) and all(len(r) == columns for r in rows), done.stdout
        for r, j in zip(rows, doc['rows']):
            for p, cell in (('out_of_place', r[-2]), ('in_place', r[-1])):
                at = j[p]
                assert len(at['samples_us']) == 3 and at['time_us'] == sorted(at['samples_us'])[1], at
                assert at['min_us'] == min(at['samples_us']) and at['max_us'] == max(at['samples_us']), at
                assert abs(at['spread'] - at['max_us'] / at['min_us']) < 1e-9 and cell == '%.2f' % at['spread'], (at, r)
                assert at['samples_iters'] == ([3] * 3 if timing[0] == '-n' else [20] * 3), at
                assert at['iters'] == at['samples_iters'][at['samples_us'].index(at['time_us'])], at
    for bad in (['--min-time', '0'], ['--repeats', '0']):
        done = subprocess.run([tool] + bad, capture_output=True, text=True)
        assert done.returncode == 2 and 'chorus-bench: error: ' in done.stderr, (bad, done.stderr)
    done = subprocess.run([tool, '--min-time', '0'], capture_output=True, text=True)
    assert done.returncode == 2 and '--min-time expects a positive time' in done.stderr, done.stderr

    # --bind core (the default): rank r's thread on CPU r mod n of the n CPUs the process may use; the preamble
    # says where each rank is. Seen from outside while it runs: /proc's affinity of the rank threads, one CPU each.
    allowed = sorted(os.sched_getaffinity(0))
    one = ['-b', '8', '-e', '8', '-n', '1', '-w', '0']

    def placed(*args, cpus=None):
        done = subprocess.run([tool] + list(args) + one, capture_output=True, text=True,
                              preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
        assert done.returncode == 0, done.stderr
        return re.findall(r'^#  Rank (\d+) .* host thread \d+ (bound to CPU (\d+)|unbound)$', done.stdout, re.M)

    # More ranks than CPUs: in turn, as mpirun --bind-to core:overload-allowed places processes.
    assert [int(cpu) for _, _, cpu in placed('--ranks', '5')] == [allowed[r % len(allowed)] for r in range(5)]
    # One CPU allowed (as taskset -c leaves it): every rank on that one.
    assert [w for _, w, _ in placed('--ranks', '2', cpus={allowed[-1]})] == ['bound to CPU %d' % allowed[-1]] * 2
    if len(allowed) >= 2:
        assert placed('--ranks', '2') == [('0', 'bound to CPU %d' % allowed[0], str(allowed[0])),
                                          ('1', 'bound to CPU %d' % allowed[1], str(allowed[1]))]
        bench_proc = subprocess.Popen([tool, '--ranks', '2', '-b', '8', '-e', '8', '--min-time', '10s', '-c', '0'],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        seen, deadline = [], time.monotonic() + 20
        try:
            time.sleep(0.5)  # past the threads' start, where they bind themselves
            while len(seen) < 2 and time.monotonic() < deadline:
                tasks = [int(t) for t in os.listdir('/proc/%d/task' % bench_proc.pid) if int(t) != bench_proc.pid]
                seen = sorted(sorted(os.sched_getaffinity(t)) for t in tasks)
                time.sleep(0.05)
        finally:
            bench_proc.kill()
            bench_proc.wait()
        assert seen == [[allowed[0]], [allowed[1]]], seen
    assert [w for _, w, _ in placed('--ranks', '2', '--bind', 'none')] == ['unbound', 'unbound']

    # --csv and --svg (and -J) from one run agree with the table.
    out_csv, out_svg, out_json = (os.path.join(tmp, 'out.' + ext) for ext in ('csv', 'svg', 'json'))
    both = run('--predict', '--csv', out_csv, '--svg', out_svg, '-J', out_json, env=env)
    table = data_rows(both.stdout)
    records = list(csv.DictReader(open(out_csv)))
    assert len(records) == len(table), (len(records), len(table))
    for rec, row in zip(records, table):
        assert int(rec['size_bytes']) == int(row[0]) and rec['type'] == row[2]
        assert abs(float(rec['oop_busbw_gbps']) - float(row[7])) <= 0.006, (rec, row)
        assert abs(float(rec['ip_busbw_gbps']) - float(row[11])) <= 0.006, (rec, row)
        assert abs(float(rec['predicted_busbw_gbps']) - float(row[14])) <= 0.006, (rec, row)
        assert rec['predicted_algorithm'] in ('one_shot', 'ring', 'two_shot'), rec
    assert all('predicted' in r for r in json.load(open(out_json))['rows'])
    dom = xml.dom.minidom.parse(out_svg)
    lines = dom.getElementsByTagName('polyline')
    assert len(lines) == 3, len(lines)  # out-of-place, in-place, predicted
    dashed = [l for l in lines if l.getAttribute('stroke-dasharray')]
    assert len(dashed) == 1 and dashed[0].getAttribute('class') == 'predicted'
    assert all(len(l.getAttribute('points').split()) == len(table) for l in lines)
    # --automatic model: the calibrated model decides what runs. CHORUS_LOG=info names, for each call
    # size's first schedule, the pattern and why; every one must be the model's (the team's automatic
    # function) and the pattern --predict priced for that size.
    logged = run('--automatic', 'model', '--predict', '-J', out_json, env=dict(env, CHORUS_LOG='info'))
    assert 'Algorithm::automatic asks this model' in logged.stdout, logged.stdout
    priced = {r['size']: r['predicted']['algorithm'] for r in json.load(open(out_json))['rows']}
    ran = re.findall(r'\((\d+) B, 2 ranks\): (\w+) because (.*)', logged.stderr)
    assert len(ran) >= 4, logged.stderr
    for size, pattern, reason in ran:
        assert 'Team::set_automatic' in reason, reason
        assert priced[int(size)] == pattern, (size, pattern, priced)
    assert run('--automatic', 'model', env=env).stdout.count('automatic: cost model on the host calibration') == 1

    # Without --predict the CSV's predicted cells are empty and the plot has no dashed line.
    run('--csv', out_csv, '--svg', out_svg, env=env)
    assert all(r['predicted_time_us'] == '' for r in csv.DictReader(open(out_csv)))
    assert len(xml.dom.minidom.parse(out_svg).getElementsByTagName('polyline')) == 2
print('ok')
