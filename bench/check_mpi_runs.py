# The bench tools under mpirun, one group of cases per meson test (bench/meson.build): each case is one
# mpirun, and the group reports every case, ok or FAILED with why and the output's tail, then exits 1 if
# any failed. (They were 35 meson tests of one mpirun each; as groups, the suite's serial stretch is a few
# tests instead of 35, and the cheap cases run a few at a time.)
#   python3 check_mpi_runs.py GROUP MPIRUN CHORUS_BENCH CHORUS_MPI_PEER
# GROUP:
#   bench_backends  chorus-bench's mpi and mpi-native backends through the correctness sweep, every
#                   collective, 3 processes (exit 0 only when every #wrong is 0); and --ranks that
#                   disagrees with the processes is refused
#   peer_sweeps     chorus-mpi-peer (MPI's own collectives) checked the same way, every collective and type,
#                   the reducing ops
#   peer_catches    ... and its check can fail: a rank that damages one byte of its result is counted
#                   (status 1, "# Out of bounds values : N FAILED")
#   peer_rejects    its usage errors exit 2 and say why
import concurrent.futures, re, subprocess, sys

group, mpirun, chorus_bench, mpi_peer = sys.argv[1:5]

# Sizes from 1 B to 256 KiB by factors of 4: counts of 0, 1, fewer than the ranks, and chunks longer than
# a pipelining slice (the cpu suite's chorus-bench runs use the same sweep).
SWEEP = ['-b', '1', '-e', '256K', '-f', '4', '-d', 'all', '-o', 'all', '-n', '1', '-w', '0', '-c', '1']
PEER_SWEEP = ['-b', '1', '-e', '256K', '-f', '4', '-n', '1', '-w', '0', '-c', '1']
COLLECTIVES = ['all_reduce', 'all_gather', 'reduce_scatter', 'broadcast', 'reduce', 'all_to_all']


class Case:
    """One mpirun: what it must exit with, and a pattern its stdout or stderr must hold."""

    def __init__(self, name, np, argv, status=0, stdout=None, stderr=None, output=None):
        self.name, self.np, self.argv = name, np, argv
        self.status, self.stdout, self.stderr, self.output = status, stdout, stderr, output

    def run(self):
        command = [mpirun, '-np', str(self.np)] + self.argv
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=240)
        except subprocess.TimeoutExpired:
            return 'did not finish within 240 s: ' + ' '.join(command)
        wrong = []
        if self.status is not None and done.returncode != self.status:
            wrong.append('exit status %d, expected %d' % (done.returncode, self.status))
        for what, pattern, text in [('stdout', self.stdout, done.stdout), ('stderr', self.stderr, done.stderr),
                                    ('output', self.output, done.stdout + done.stderr)]:
            if pattern and not re.search(pattern, text, re.MULTILINE):
                wrong.append('%s lacks /%s/' % (what, pattern))
        if not wrong:
            return None
        tail = ''.join('\n  | ' + l for l in (done.stdout + done.stderr)[-3000:].splitlines())
        return '%s\n  $ %s%s' % ('; '.join(wrong), ' '.join(command), tail)


def cases_of(group):
    if group == 'bench_backends':
        runs = [Case('chorus-bench --backend %s --collective %s' % (backend, c), 3,
                     [chorus_bench, '--backend', backend, '--collective', c, '-r', 'all'] + SWEEP)
                for backend in ['mpi', 'mpi-native'] for c in COLLECTIVES]
        return runs + [Case('chorus-bench --backend mpi --ranks 3 under 2 processes is refused', 2,
                            [chorus_bench, '--backend', 'mpi', '--ranks', '3', '-b', '8', '-e', '8'], status=None,
                            output='disagrees with the 2 MPI processes')], 1
    if group == 'peer_sweeps':
        runs = [['all_reduce', 'sum'], ['all_reduce', 'prod'], ['all_reduce', 'max'], ['all_reduce', 'min'],
                ['reduce_scatter', 'sum'], ['reduce_scatter', 'max'], ['reduce', 'min'], ['all_gather', 'sum'],
                ['broadcast', 'sum'], ['all_to_all', 'sum']]
        return [Case('chorus-mpi-peer --collective %s -o %s' % (c, op), 3,
                     [mpi_peer, '--collective', c, '-o', op, '-d', 'all'] + PEER_SWEEP) for c, op in runs], 1
    if group == 'peer_catches':
        corrupt = [['all_reduce', '1', '0'], ['broadcast', '1', '0'], ['reduce_scatter', '0', '0'], ['reduce', '0', '0']]
        return [Case('chorus-mpi-peer --collective %s --corrupt-rank %s -r %s is caught' % (c, rank, root), 2,
                     [mpi_peer, '--collective', c, '--corrupt-rank', rank, '-r', root, '-b', '8', '-e', '1K', '-f', '8',
                      '-n', '1', '-w', '0'], status=1, stdout=r'^# Out of bounds values : [1-9][0-9]* FAILED$')
                for c, rank, root in corrupt], 2
    if group == 'peer_rejects':
        bad = [['-o', 'avg'], ['-o', 'all'], ['-d', 'float8'], ['-b', '64', '-e', '8'], ['-r', '2'],
               ['--collective', 'gather'], ['--no-such-flag'], ['-f', '1', '-b', '8', '-e', '64']]
        return [Case('chorus-mpi-peer %s is refused' % ' '.join(b), 2, [mpi_peer] + b, status=2,
                     stderr='chorus-mpi-peer: error: ') for b in bad], 4
    sys.exit('check_mpi_runs.py: no group %r (bench_backends, peer_sweeps, peer_catches, peer_rejects)' % group)


cases, jobs = cases_of(group)
with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
    results = list(pool.map(Case.run, cases))
for case, problem in zip(cases, results):
    print(('ok      %s' % case.name) if problem is None else ('FAILED  %s: %s' % (case.name, problem)))
failed = sum(problem is not None for problem in results)
print('%s: %d of %d cases passed' % (group, len(cases) - failed, len(cases)))
sys.exit(1 if failed else 0)
