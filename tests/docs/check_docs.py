#!/usr/bin/env python3
"""Checks that the code and the shown output in README.md and docs/**/*.md still match the code.

Every fenced block says what it is by its info string, and the check treats each kind so:

  cpp, c++   compiled against include/ (-std=c++17 -fsyntax-only). A block with `int main(` is a whole
             program; any other block needs a `compile` marker that says how to wrap it, or a `skip`.
             A program followed by an `output` block is also linked, run and its output compared.
  console    a shell session: lines starting with `$ ` are commands (a trailing `\\` continues one), the
             lines after a command are its output. Each command is run and its output compared.
  output     the output of the C++ program just above it (the previous fenced block).
  sh         commands shown without output: not run.
  text, json, xml, meson, ...   diagrams, formulas, file formats, messages quoted in prose: not checked.

A fence with no info string fails: say what the block is. So does a `text` block that starts with `$ `
(a session: make it `console`), and a `text` block right after an `sh` block or a C++ program with at most
two lines of prose between (it looks like their output: make it `console`/`output`, mark it `output of:`, or
skip it); so does a `json` or `xml` block there.

Markers are one-line HTML comments on the last non-blank line before the fence:

  <!-- docs-test: skip (why) -->                 not checked; the reason is required
  <!-- docs-test: compile -->                    C++ statements: wrapped in a function, with
                                                 <chorus/chorus.hpp> and common std headers included
  <!-- docs-test: compile toplevel -->           C++ declarations: placed at namespace scope
  <!-- docs-test: compile given: DECLS -->       DECLS (C++ declarations, e.g. `extern chorus::host::Comm& comm;`,
                                                 and `#include <...>`s) are placed before the block
  <!-- docs-test: compile with NAME -->          the declarations of CONTEXTS[NAME] below (host: a communicator
                                                 and the collectives' argument names; parallel: the parallel
                                                 layer, a model, an optimizer) are placed before the block
                                                 (toplevel, with and given combine, in that order)
  <!-- docs-test: run unordered -->              console: compare the output lines as a multiset (threads print
                                                 in any order)
  <!-- docs-test: output of: COMMAND -->         a text or json block that shows COMMAND's output without the
                                                 command: COMMAND is run and its output compared (json: as data,
                                                 keys in order, so the page may lay it out compactly)
  <!-- docs-test: run timings -->                console: the output holds measurements: decimal numbers (1.23,
                                                 4e-05) match any decimal number and runs of spaces match one space
                                                 (columns widen with the numbers); combines with unordered

Comparison (console and output blocks) is exact, line by line, after trailing spaces and trailing blank lines
are dropped, except: a shown line that starts with `...` (after spaces; the rest of it is a comment) matches any
number of lines; `pid1234`/`Pid 1234` (and `pid1234-t5678`) match any process id, ISO dates and hh:mm:ss times
match any, and this machine's host name matches the shown one's place only where it is printed.

Commands run with bash in a scratch folder where build, build-dev and build-release link to the build directory
and bench, include and tests link to the source tree; PATH starts with the build's bench/, bench/trace/ and
examples/; XDG_CACHE_HOME is the scratch folder's (nothing cached by earlier runs). A command gets 20 s.

Usage: check_docs.py --source-root DIR --build-dir DIR --cxx 'g++' [--mpicxx mpicxx] [--no-commands] [-v]
"""

import argparse
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time

MARKER = re.compile(r'^\s*<!--\s*docs-test:\s*(.*?)\s*-->\s*$')
FENCE = re.compile(r'^(\s*)(```+|~~~+)\s*([^\s`]*)[^`]*$')
COMMAND_TIMEOUT_S = 20
STD_HEADERS = ['algorithm', 'chrono', 'cstdint', 'cstdio', 'cstdlib', 'cstring', 'iostream', 'memory', 'random',
               'stdexcept', 'string', 'thread', 'vector']


class Block:
    def __init__(self, path, line, indent, lang, body, marker):
        self.path, self.line, self.indent, self.lang, self.body, self.marker = path, line, indent, lang, body, marker
        self.prose_before = 0   # non-blank prose lines between the previous fence and this one
        self.prev = None

    def where(self):
        return f'{self.path}:{self.line}'


def parse(root, rel):
    lines = open(os.path.join(root, rel), encoding='utf-8').read().split('\n')
    blocks, prose, i = [], 0, 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            if lines[i].strip() and not MARKER.match(lines[i]):
                prose += 1
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3).lower()
        j = i + 1
        close = re.compile(r'^\s*' + re.escape(fence[0]) + '{' + str(len(fence)) + r',}\s*$')
        while j < len(lines) and not close.match(lines[j]):
            j += 1
        body = [ln[len(indent):] if ln.startswith(indent) else ln.lstrip() for ln in lines[i + 1:j]]
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        mm = MARKER.match(lines[k]) if k >= 0 else None
        b = Block(rel, i + 1, indent, lang, body, mm.group(1) if mm else None)
        b.prose_before = prose
        b.prev = blocks[-1] if blocks else None
        blocks.append(b)
        prose, i = 0, j + 1
    return blocks


def is_program(b):
    return b.lang in ('cpp', 'c++') and any(re.match(r'\s*int\s+main\s*\(', ln) for ln in b.body)


# ---------------------------------------------------------------------------------------------- normalising

HOST = socket.gethostname()


def normalise(line, timings=False):
    line = line.rstrip()
    line = re.sub(r'\d{4}-\d{2}-\d{2}', '<date>', line)
    line = re.sub(r'\b\d{1,2}:\d{2}:\d{2}\b', '<time>', line)
    line = re.sub(r'\b(pid|Pid )\d+', r'\1#', line)
    line = re.sub(r'\bpid#-t\d+', 'pid#-t#', line)
    if HOST and len(HOST) > 2:
        line = re.sub(r'\b' + re.escape(HOST) + r'\b', '<host>', line)
    if timings:
        line = re.sub(r'(?<![\w.])[-+]?\d*\.\d+([eE][-+]?\d+)?|(?<![\w.])[-+]?\d+[eE][-+]?\d+', '#.#', line)
        line = re.sub(r'\s+', ' ', line).strip()
    return line


def trim(lines):
    lines = list(lines)
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def matches(shown, actual, timings=False):
    """shown may hold `...` lines (any number of lines)."""
    shown = [None if s.strip().startswith('...') else normalise(s, timings) for s in trim(shown)]
    actual = [normalise(a, timings) for a in trim(actual)]
    memo, furthest = {}, [0]

    def go(i, j):
        key = (i, j)
        if key in memo:
            return memo[key]
        furthest[0] = max(furthest[0], i)
        if i == len(shown):
            r = j == len(actual)
        elif shown[i] is None:
            r = any(go(i + 1, k) for k in range(j, len(actual) + 1))
        else:
            r = j < len(actual) and shown[i] == actual[j] and go(i + 1, j + 1)
        memo[key] = r
        return r

    ok = go(0, 0)
    return ok, furthest[0]


def diff_text(shown, actual, first_bad):
    import difflib
    shown = trim(shown)
    where = (f'the first shown line that matches nothing printed: {shown[first_bad]!r}\n'
             if first_bad < len(shown) else 'the command printed more than is shown (end the block with `...`?)\n')
    lines = list(difflib.unified_diff(shown, trim(actual), 'shown in the docs', 'printed now', lineterm=''))
    if len(lines) > 40:
        lines = lines[:40] + [f'... ({len(lines) - 40} more diff lines)']
    return where + '\n'.join(lines)


# ---------------------------------------------------------------------------------------------- C++

# Declarations that several pages' fragments share, named by `compile with NAME`.
CONTEXTS = {
    # a host communicator and the argument names docs use for the collectives' parameters
    'host': 'using Comm = chorus::host::Comm; extern Comm& comm; extern float *send, *recv, *data; '
            'extern std::size_t count, send_count, recv_count, count_per_peer; extern int root, peer, color, key; '
            'extern chorus::ReduceOp op;',
    # the parallel layer over a host communicator, and the training loop's names (a model, an optimizer)
    'parallel': 'using namespace chorus::parallel; using Comm = chorus::host::Comm; extern Comm& comm; '
                'struct Model { std::vector<ParamView> params(); std::vector<ParamView> grads(); '
                'template <class... A> void forward(A&&...); template <class... A> void backward(A&&...); }; '
                'extern Model model; extern std::vector<ParamView> grads; extern std::size_t index, dataset_size; '
                'extern std::uint64_t epoch, epochs, step, steps, steps_per_epoch; '
                'struct Optimizer { void step(); void set_lr(double); }; extern Optimizer optimizer; '
                'void backward(); double decay(std::uint64_t);',
}


def parse_compile_marker(marker):
    m = re.match(r'compile(\s+toplevel)?(?:\s+with\s+(\w+))?(?:\s+given:\s*(.*))?$', marker)
    if not m or (m.group(2) and m.group(2) not in CONTEXTS):
        return None
    given = m.group(3) or ''
    includes = re.findall(r'#include\s*<[^>]+>', given)
    given = re.sub(r'#include\s*<[^>]+>', '', given).strip()
    if m.group(2):
        given = CONTEXTS[m.group(2)] + ' ' + given
    return {'toplevel': bool(m.group(1)), 'given': given, 'includes': includes}


def needs_mpi(b):
    text = '\n'.join(b.body)
    return '<chorus/mpi' in text or 'MPI_' in text


def unit_for(blocks):
    """One translation unit for many blocks: includes hoisted, each block in a namespace of its own, and
    #line directives so that the compiler's errors name the markdown file and line."""
    includes = ['#include <chorus/chorus.hpp>'] + [f'#include <{h}>' for h in STD_HEADERS]
    parts = []
    for n, (b, how) in enumerate(blocks):
        for inc in how.get('includes', []):
            if inc not in includes:
                includes.append(inc)
        body = []
        for k, ln in enumerate(b.body):
            if re.match(r'\s*#\s*include\b', ln):
                if ln.strip() not in includes:
                    includes.append(ln.strip())
                body.append('')
            else:
                body.append(re.sub(r'\bint\s+main\s*\(', 'int docs_main(', ln))
        parts.append(f'namespace docs_block_{n} {{')
        if how['given']:
            parts.append(f'#line {b.line} "{b.path} (given)"')
            parts.append(how['given'])
        wrap = not how['toplevel']
        if wrap:
            parts.append(f'[[maybe_unused]] void docs_fragment() {{')
        parts.append(f'#line {b.line + 1} "{b.path}"')
        parts.extend(body)
        if wrap:
            parts.append('}')
        parts.append('}')
    return '\n'.join(includes) + '\n' + '\n'.join(parts) + '\n'


def run_compiler(cmd, source, tmp, name):
    path = os.path.join(tmp, name + '.cpp')
    with open(path, 'w') as f:
        f.write(source)
    t = time.time()
    p = subprocess.run(cmd + [path], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr, time.time() - t


# ---------------------------------------------------------------------------------------------- commands

def parse_session(body):
    """[(command, [shown output lines])] from a console block."""
    items, i = [], 0
    while i < len(body):
        ln = body[i]
        if ln.startswith('$ '):
            cmd = ln[2:]
            while cmd.endswith('\\') and i + 1 < len(body):
                i += 1
                cmd = cmd + '\n' + body[i]
            items.append([cmd, []])
        elif items:
            items[-1][1].append(ln)
        i += 1
    return items


def make_scratch(args):
    d = tempfile.mkdtemp(prefix='chorus-docs-')
    for name in ('build', 'build-dev', 'build-release'):
        os.symlink(os.path.abspath(args.build_dir), os.path.join(d, name))
    for name in ('bench', 'include', 'tests'):
        os.symlink(os.path.join(os.path.abspath(args.source_root), name), os.path.join(d, name))
    return d


def run_command(cmd, cwd, env):
    try:
        p = subprocess.run(['bash', '-c', cmd], cwd=cwd, env=env, capture_output=True, text=True,
                           timeout=COMMAND_TIMEOUT_S)
        return p.stdout + p.stderr, None
    except subprocess.TimeoutExpired:
        return '', f'did not finish in {COMMAND_TIMEOUT_S} s (mark the block `skip (too slow)` or show a smaller run)'


# ---------------------------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--source-root', required=True)
    ap.add_argument('--build-dir', required=True)
    ap.add_argument('--cxx', required=True, help="the C++ compiler command, e.g. 'ccache g++'")
    ap.add_argument('--mpicxx', default='', help='MPI compiler wrapper; without it, blocks that need MPI are skipped')
    ap.add_argument('--no-commands', action='store_true', help='the build has no tools: run no commands')
    ap.add_argument('-j', '--jobs', type=int, default=2)
    ap.add_argument('-v', '--verbose', action='store_true')
    ap.add_argument('files', nargs='*', help='markdown files relative to the source root (default: all)')
    args = ap.parse_args()
    root = args.source_root
    started = time.time()

    files = args.files
    if not files:
        files = ['README.md']
        for d, _, names in sorted(os.walk(os.path.join(root, 'docs'))):
            files += sorted(os.path.relpath(os.path.join(d, n), root) for n in names if n.endswith('.md'))

    errors, skips = [], []
    compile_cpu, compile_mpi, programs, sessions = [], [], [], []

    for rel in files:
        blocks = parse(root, rel)
        for idx, b in enumerate(blocks):
            nxt = blocks[idx + 1] if idx + 1 < len(blocks) else None
            marker = b.marker or ''
            if marker.startswith('skip'):
                m = re.match(r'skip\s*\((.+)\)$', marker)
                if not m:
                    errors.append(f'{b.where()}: a skip needs a reason: <!-- docs-test: skip (why) -->')
                else:
                    skips.append((b, m.group(1)))
                continue
            m = re.match(r'output of:\s*(.+)$', marker)
            if m:
                if b.lang in ('cpp', 'c++', 'console', 'sh', 'output', ''):
                    errors.append(f'{b.where()}: `output of:` marks a text or json block')
                else:
                    sessions.append((b, [(m.group(1), b.body)], False, False, b.lang == 'json'))
                continue
            if marker and not re.match(r'(compile\b|run( unordered| timings)+$)', marker):
                errors.append(f'{b.where()}: unknown marker `{marker}` (see tests/docs/check_docs.py)')
                continue
            if not b.lang:
                errors.append(f'{b.where()}: a fence without an info string: say what the block is '
                              '(cpp, console, output, sh, text, ...; docs/docs-tests.md)')
                continue
            if b.lang in ('cpp', 'c++'):
                how = parse_compile_marker(marker) if marker else None
                if marker and how is None:
                    errors.append(f'{b.where()}: cannot read `{marker}`: <!-- docs-test: compile [toplevel] '
                                  f'[with {"|".join(CONTEXTS)}] [given: DECLS] -->')
                    continue
                if is_program(b):
                    how = how or {'toplevel': True, 'given': ''}
                    how['toplevel'] = True
                elif how is None:
                    errors.append(f'{b.where()}: a C++ block that is not a whole program needs '
                                  '<!-- docs-test: compile [toplevel] [with NAME] [given: DECLS] --> or a skip '
                                  'with a reason')
                    continue
                (compile_mpi if needs_mpi(b) else compile_cpu).append((b, how))
                if nxt is not None and nxt.lang == 'output' and is_program(b):
                    programs.append((b, nxt))
                continue
            if b.lang == 'output':
                if b.prev is None or not is_program(b.prev) or (b.prev.marker or '').startswith('skip'):
                    errors.append(f'{b.where()}: an output block must follow the C++ program whose output it is')
                continue
            if any(ln.startswith('$ ') for ln in b.body):
                if b.lang != 'console':
                    errors.append(f'{b.where()}: a block with `$ ` commands is a session: make it ```console')
                    continue
                sessions.append((b, parse_session(b.body), 'unordered' in marker.split(), 'timings' in marker.split(),
                                 False))
                continue
            if b.lang == 'console':
                errors.append(f'{b.where()}: a console block without a `$ ` command')
                continue
            if b.lang in ('text', 'json', 'xml') and b.prev is not None and b.prose_before <= 2 and \
                    (b.prev.lang == 'sh' or is_program(b.prev)):
                errors.append(f'{b.where()}: this {b.lang} block follows the commands or program at {b.prev.where()} '
                              'closely: if it is their output, show it as ```console / ```output; if not, '
                              'say what it is in the prose between them, or skip it with a reason')

    tmp = tempfile.mkdtemp(prefix='chorus-docs-cxx-')
    results = []   # (ok, what, message)
    base = shlex.split(args.cxx) + ['-std=c++17', '-fsyntax-only', '-I', os.path.join(root, 'include'),
                                    '-Wall', '-Wno-unused-variable', '-Wno-unused-but-set-variable',
                                    '-Wno-unused-function', '-Wno-unused-local-typedefs',
                                    '-Wno-unused-value',   # `t.makespan;   // 33` shows a value
                                    '-Wno-return-type']    # main() renamed to batch programs into one unit

    def compile_batch(blocks, cmd, name):
        if not blocks:
            return
        rc, out, secs = run_compiler(cmd, unit_for(blocks), tmp, name)
        what = f'compiled {len(blocks)} C++ blocks ({name}, {secs:.1f} s)'
        results.append((rc == 0, what, out if rc else ''))

    def build_and_run(prog, out_block):
        exe = os.path.join(tmp, f'prog_{prog.line}')
        src = exe + '.cpp'
        with open(src, 'w') as f:
            f.write(f'#line {prog.line + 1} "{prog.path}"\n' + '\n'.join(prog.body) + '\n')
        cmd = shlex.split(args.cxx) + ['-std=c++17', '-O1', '-pthread', '-I', os.path.join(root, 'include'),
                                       src, '-o', exe]
        p = subprocess.run(cmd, capture_output=True, text=True)
        what = f'{prog.where()}: program run, output compared with {out_block.where()}'
        if p.returncode:
            results.append((False, what, p.stdout + p.stderr))
            return
        try:
            r = subprocess.run([exe], capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, cwd=tmp)
            actual = (r.stdout + r.stderr).split('\n')
        except subprocess.TimeoutExpired:
            results.append((False, what, f'did not finish in {COMMAND_TIMEOUT_S} s'))
            return
        ok, bad = matches(out_block.body, actual)
        results.append((ok, what, '' if ok else diff_text(out_block.body, actual, bad)))

    def run_session(b, items, unordered, timings, as_json):
        scratch = make_scratch(args)
        env = dict(os.environ)
        bd = os.path.abspath(args.build_dir)
        env['PATH'] = os.pathsep.join([os.path.join(bd, 'bench'), os.path.join(bd, 'bench', 'trace'),
                                       os.path.join(bd, 'examples'), env.get('PATH', '')])
        env['XDG_CACHE_HOME'] = os.path.join(scratch, 'cache')   # no calibration cached by an earlier run
        try:
            for cmd, shown in items:
                out, err = run_command(cmd, scratch, env)
                first = cmd.split('\n')[0]
                what = f'{b.where()}: $ {first[:90]}'
                if err:
                    results.append((False, what, err))
                    return
                actual = out.split('\n')
                if as_json:
                    try:
                        pairs = lambda text: json.loads(text, object_pairs_hook=list)   # key order counts
                        ok, bad = pairs('\n'.join(shown)) == pairs(out), 0
                    except ValueError as e:
                        ok, bad = False, 0
                        out = f'not JSON: {e}\n' + out
                    results.append((ok, what + ' (compared as JSON)', '' if ok else
                                    'the shown JSON differs from what the command printed:\n' + out[:3000]))
                elif unordered:
                    ok, bad = sorted(normalise(s, timings) for s in trim(shown)) == \
                        sorted(normalise(a, timings) for a in trim(actual)), len(trim(shown))
                else:
                    ok, bad = matches(shown, actual, timings)
                if not as_json:
                    results.append((ok, what, '' if ok else diff_text(shown, actual, bad)))
                if not ok:
                    return
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(compile_batch, compile_cpu, base, 'cpu')]
        if compile_mpi:
            if args.mpicxx:
                mpi = shlex.split(args.mpicxx) + base[len(shlex.split(args.cxx)):]
                futures.append(pool.submit(compile_batch, compile_mpi, mpi, 'mpi'))
            else:
                skips.extend((b, 'needs MPI: this build has no MPI compiler') for b, _ in compile_mpi)
        for prog, out in programs:
            futures.append(pool.submit(build_and_run, prog, out))
        if args.no_commands:
            for b, *_ in sessions:
                skips.append((b, 'this build has no tools (-Dtools=false)'))
        else:
            for session in sessions:
                futures.append(pool.submit(run_session, *session))
        for f in futures:
            f.result()
    shutil.rmtree(tmp, ignore_errors=True)

    failed = [r for r in results if not r[0]]
    for ok, what, msg in results:
        if args.verbose or not ok:
            print(('ok     ' if ok else 'FAILED ') + what)
        if msg:
            print('\n'.join('    ' + ln for ln in msg.rstrip().split('\n')))
    if args.verbose:
        for b, why in skips:
            print(f'skip   {b.where()} ({b.lang or "no info string"}): {why}')
    for e in errors:
        print('ERROR  ' + e)
    ncmd = sum(1 for r in results if ': $ ' in r[1])
    ncxx = len(compile_cpu) + (len(compile_mpi) if args.mpicxx else 0)
    print(f'docs test: {len(files)} pages; {ncxx} C++ blocks compiled, {len(programs)} of them run; '
          f'{ncmd} commands run; {len(skips)} blocks skipped with a reason; '
          f'{len(failed)} checks failed, {len(errors)} blocks in error; {time.time() - started:.1f} s')
    return 1 if failed or errors else 0


if __name__ == '__main__':
    sys.exit(main())
