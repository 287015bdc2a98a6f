# chorus-run end to end with small shell commands as the ranks (docs/chorus-run.md): each rank's
# environment, --label's prefixes, stdin, exit statuses (first failure, signal death, missing program),
# signals passed on and the grace period, ranks and what they started gone afterwards, and bad arguments.
#   usage: check_chorus_run.py CHORUS_RUN
import os, re, signal, subprocess, sys, tempfile, time

tool = sys.argv[1]
# The launcher variables of whatever started this script must not leak into the ranks' environment here.
base_env = {k: v for k, v in os.environ.items()
            if k not in ('CHORUS_STORE', 'MASTER_ADDR', 'MASTER_PORT', 'RANK', 'WORLD_SIZE')}


def run(args, env=None, stdin=subprocess.DEVNULL, timeout=30):
    start = time.monotonic()
    done = subprocess.run([tool] + args, capture_output=True, text=True, stdin=stdin, timeout=timeout,
                          env=dict(base_env, **(env or {})))
    return done, time.monotonic() - start


def alive(pid):
    # A zombie is dead: it waits only for its new parent (pid 1 here, which may reap late) to reap it.
    try:
        return open('/proc/%d/stat' % pid).read().rsplit(')', 1)[1].split()[0] != 'Z'
    except (FileNotFoundError, ProcessLookupError):
        return False


def gone(pids, within=5.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


def pids_in(directory, count, within=10.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        names = os.listdir(directory)
        if len(names) == count and all(open(os.path.join(directory, n)).read().endswith('\n') for n in names):
            return [int(open(os.path.join(directory, n)).read()) for n in names]
        time.sleep(0.05)
    raise AssertionError('the ranks did not all start: %s' % os.listdir(directory))


# Each rank sees its own RANK and LOCAL_RANK, the job's size, and one store address shared by all.
done, _ = run(['-n', '3', 'sh', '-c', 'echo "$RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $MASTER_ADDR '
               '$MASTER_PORT $CHORUS_STORE ${OMPI_COMM_WORLD_RANK-unset}"'], env={'OMPI_COMM_WORLD_RANK': '7'})
assert done.returncode == 0, done
rows = sorted(line.split() for line in done.stdout.splitlines())
assert [r[:4] for r in rows] == [[str(i), '3', str(i), '3'] for i in range(3)], rows
ports = {r[5] for r in rows}
assert len(ports) == 1 and 0 < int(ports.pop()) < 65536, rows
assert all(r[4] == '127.0.0.1' and r[6] == 'tcp://127.0.0.1:' + r[5] and r[7] == 'unset' for r in rows), rows

# --port chooses the port; a CHORUS_STORE the user set is kept (MASTER_* are set all the same).
done, _ = run(['-n', '2', '--port', '23456', 'sh', '-c', 'echo "$MASTER_PORT $CHORUS_STORE"'])
assert done.stdout.splitlines() == ['23456 tcp://127.0.0.1:23456'] * 2, done
done, _ = run(['-n', '2', '--port', '23457', 'sh', '-c', 'echo "$CHORUS_STORE $MASTER_ADDR $MASTER_PORT"'],
              env={'CHORUS_STORE': 'file:///tmp/s', 'MASTER_PORT': '1'})
assert done.returncode == 0 and done.stdout.splitlines() == ['file:///tmp/s 127.0.0.1 23457'] * 2, done

# PROGRAM's own flags are PROGRAM's, with or without '--'.
for args in (['-n', '1', 'sh', '-c', 'printf "%s\\n" "$1"', 'sh', '-n'], ['-n', '1', '--', 'sh', '-c', 'printf "%s\\n" "$1"', 'sh', '-n']):
    done, _ = run(args)
    assert done.returncode == 0 and done.stdout == '-n\n', (args, done)

# Without --label the ranks write straight to chorus-run's stdout and stderr.
done, _ = run(['-n', '2', 'sh', '-c', 'echo out; echo err >&2'])
assert done.stdout == 'out\nout\n' and done.stderr == 'err\nerr\n', done

# --label: every line of both streams is whole and starts with its rank's '[rank] ', however the ranks'
# lines interleave; an unfinished last line is written with '\n' added.
done, _ = run(['-n', '3', '--label', 'sh', '-c',
               'i=0; while [ $i -lt 300 ]; do echo "out $RANK $i"; echo "err $RANK $i" >&2; i=$((i+1)); done; '
               'printf "tail $RANK"'])
assert done.returncode == 0, done
for stream, name in ((done.stdout, 'out'), (done.stderr, 'err')):
    assert stream.endswith('\n'), stream[-100:]
    lines = stream.splitlines()
    for rank in range(3):
        mine = [l for l in lines if l.startswith('[%d] ' % rank)]
        expected = ['[%d] %s %d %d' % (rank, name, rank, i) for i in range(300)]
        if name == 'out':
            expected.append('[%d] tail %d' % (rank, rank))
        assert mine == expected, (name, rank, mine[:3], mine[-3:])
    assert len(lines) == 3 * (301 if name == 'out' else 300), len(lines)

# Only rank 0 reads chorus-run's stdin; the others read /dev/null.
with tempfile.NamedTemporaryFile('w+') as source:
    done, _ = run(['-n', '2', '--label', 'sh', '-c', 'readlink /proc/$$/fd/0'], stdin=source)
    assert sorted(done.stdout.splitlines()) == ['[0] ' + source.name, '[1] /dev/null'], done

# All succeed: 0. One fails: its status, at once, and every other rank (and what it started) is ended.
assert run(['-n', '3', 'true'])[0].returncode == 0
assert run(['-n', '2', 'false'])[0].returncode == 1
# Everything a rank started is in its process group and gets the SIGTERM too (here a subshell that says so).
with tempfile.TemporaryDirectory() as tmp:
    os.mkdir(tmp + '/pid')
    os.mkdir(tmp + '/term')
    # Rank 2 fails once the others are ready (their subshell's trap is set before it writes its pid file).
    done, took = run(['--grace', '1', '-n', '4', 'sh', '-c', 'if [ "$RANK" = 2 ]; then while [ $(ls %s/pid | wc -l) -lt 3 ]; do '
                      'sleep 0.05; done; exit 3; fi; '
                      '(trap "echo > %s/term/$RANK; exit" TERM; sleep 30 & echo $! > %s/pid/$RANK; wait) & wait'
                      % (tmp, tmp, tmp)])
    assert done.returncode == 3 and took < 10, (done, took)
    assert 'rank 2 exited with status 3' in done.stderr and 'SIGKILL' not in done.stderr, done.stderr
    sleepers = pids_in(tmp + '/pid', 3)
    assert gone(sleepers), 'still running after chorus-run exited: %s' % sleepers
    assert sorted(os.listdir(tmp + '/term')) == ['0', '1', '3'], os.listdir(tmp + '/term')

# The first failure's status, not a later one's; the grace period is the only wait.
# (Rank 2 would exit 7 later; it is ended by then, and its 143 does not count either.)
done, took = run(['--grace', '1', '-n', '3', 'sh', '-c',
                  'case $RANK in 1) sleep 0.2; exit 5;; 2) sleep 3; exit 7;; esac; sleep 30'])
assert done.returncode == 5 and took < 10, (done, took)

# Death by a signal: 128 + the signal, as shells report it.
done, took = run(['--grace', '1', '-n', '2', 'sh', '-c', 'if [ "$RANK" = 1 ]; then kill -KILL $$; fi; exec sleep 30'])
assert done.returncode == 128 + 9 and took < 10, (done, took)
assert 'rank 1 was killed by signal 9' in done.stderr, done.stderr

# After a failure the other ranks get the grace period to end on their own (a chorus communicator
# releases them with its report) before any signal: rank 0 finishes its 0.5 s of work untouched.
with tempfile.TemporaryDirectory() as tmp:
    done, took = run(['--grace', '3', '-n', '2', 'sh', '-c',
                      'if [ "$RANK" = 1 ]; then exit 6; fi; trap "touch %s/term" TERM; sleep 0.5; touch %s/done'
                      % (tmp, tmp)])
    assert done.returncode == 6 and took < 3, (done, took)
    assert os.path.exists(tmp + '/done') and not os.path.exists(tmp + '/term'), os.listdir(tmp)
    assert 'SIGTERM' in done.stderr and 'sending SIGTERM' not in done.stderr, done.stderr

# A rank that ignores SIGTERM is killed once the grace period has passed, not before.
with tempfile.TemporaryDirectory() as tmp:
    done, took = run(['--grace', '1.5', '-n', '2', 'sh', '-c',
                      'if [ "$RANK" = 0 ]; then while [ ! -e %s/ready ]; do sleep 0.05; done; exit 4; fi; '
                      'trap "" TERM; touch %s/ready; sleep 30' % (tmp, tmp)])
assert done.returncode == 4 and 1.5 <= took < 10, (done, took)
assert 'sending SIGKILL' in done.stderr, done.stderr

# SIGTERM and SIGINT sent to chorus-run reach every rank; it exits with their status and leaves nothing.
for signo in (signal.SIGTERM, signal.SIGINT):
    with tempfile.TemporaryDirectory() as tmp:
        # The shell's `sleep &` ignores SIGINT (a non-interactive shell's background job does): it outlives
        # its rank, and the SIGTERM that the rank's death (the first failure) sends every group ends it.
        job = subprocess.Popen([tool, '--grace', '1', '-n', '3', 'sh', '-c',
                                'sleep 30 & echo $! > %s/s$RANK; echo $$ > %s/$RANK; wait' % (tmp, tmp)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=base_env)
        ranks = pids_in(tmp, 6)
        job.send_signal(signo)
        try:
            out, err = job.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            job.kill()
            raise AssertionError('chorus-run did not end after %s' % signo.name)
        assert job.returncode == 128 + signo, (signo.name, job.returncode, err)
        assert gone(ranks), (signo.name, ranks)
        assert 'got %s' % signo.name in err, err

# chorus-run killed outright (no chance to end the job): each rank still gets SIGTERM.
with tempfile.TemporaryDirectory() as tmp:
    job = subprocess.Popen([tool, '-n', '2', 'sh', '-c', 'echo $$ > %s/$RANK; exec sleep 30' % tmp], env=base_env)
    ranks = pids_in(tmp, 2)
    job.kill()
    job.wait(timeout=10)
    assert gone(ranks), ranks

# A program that cannot be run: 127 when there is no such program (126 when it is not executable), said
# once, and the job ends at once.
done, took = run(['-n', '4', 'chorus-run-no-such-program'])
assert done.returncode == 127 and took < 10, (done, took)
assert done.stderr == "chorus-run: error: cannot run 'chorus-run-no-such-program': No such file or directory\n", done
with tempfile.NamedTemporaryFile() as not_executable:
    done, _ = run(['-n', '2', not_executable.name])
    assert done.returncode == 126 and 'Permission denied' in done.stderr, done

# Bad arguments: status 2 and the reason.
for bad in [['-n', '0', 'true'], ['true'], ['-n', '2'], ['-n', '2', '--'], ['-n', 'x', 'true'],
            ['-n', '2', '--bogus', 'true'], ['--grace', '-1', '-n', '2', 'true'], ['--port', '0', '-n', '1', 'true'],
            ['-n']]:
    done, _ = run(bad)
    assert done.returncode == 2 and done.stderr.startswith('chorus-run: error: '), (bad, done)
print('ok')
