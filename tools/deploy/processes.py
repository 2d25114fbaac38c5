# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""The service processes of the deployment, and its own log.

Each service is a process of its own session, started by
:meth:`Processes.start` with its output in ``<work>/logs/<name>.log`` and
its PID in ``<work>/pids/<name>``, and stopped by that PID. Every command
the deployment runs, and every phase with its time, is printed and
written to ``<work>/logs/deploy.log``, with the passwords masked.
"""

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.dirname(sys.executable)
HOST = '127.0.0.1'


class Failure(Exception):
    pass


def said(exc):
    """One line on a failure: its first line and its last.

    A command's failure names the command on its first line and ends with
    what the command printed last (:meth:`Processes.run`); deploy.py's
    SIGTERM handler exits with 128 + the signal.
    """
    code = getattr(exc, 'code', None)
    if isinstance(exc, SystemExit) and isinstance(code, int) and code > 128:
        return 'stopped by signal %d' % (code - 128)
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    line = lines[0] if lines else type(exc).__name__
    if len(lines) > 1:
        line += ' ... ' + lines[-1][:300]
    return line


def summary(exc, phase):
    """:func:`said` of a failure, and the phase it happened in."""
    return '%s, in %s' % (said(exc), phase or 'no phase (between two)')


class Processes:
    """Start, watch and stop the services; run commands; note progress."""

    def _mask(self, text):
        for value in self.pw.values():
            text = text.replace(value, '***')
        return text

    def start(self, name, argv, env=None, cwd=None, log=None):
        path = os.path.join(self.logs, (log or name) + '.log')
        out = open(path, 'ab')
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, cwd=cwd,
                                env=dict(os.environ, **(env or {})),
                                start_new_session=True)
        out.close()
        self.procs[name] = (proc, path)
        with open(os.path.join(self.work, 'pids', name), 'w') as f:
            f.write('%d\n' % proc.pid)
        self.note('started %s (pid %d), log %s' % (name, proc.pid, path))
        return path

    def stop(self, *names, timeout=30):
        """Stop NAMES: each is sent SIGTERM first, then waited for."""
        procs = [(name, self.procs.pop(name)[0]) for name in names]
        for _name, proc in procs:
            if proc.poll() is None:
                # The session this script started for it: its pid is the
                # process group id.
                os.killpg(proc.pid, signal.SIGTERM)
        for name, proc in procs:
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            os.unlink(os.path.join(self.work, 'pids', name))
            self.note('stopped %s' % name)

    def stop_all(self):
        for name in reversed(list(self.procs)):
            try:
                self.stop(name)
            except Exception as e:  # keep stopping the others
                self.note('could not stop %s: %s' % (name, e))

    def check_alive(self):
        dead = [(n, p.returncode, path)
                for n, (p, path) in self.procs.items()
                if p.poll() is not None]
        if dead:
            raise Failure('services exited: %s' % ', '.join(
                '%s rc=%s (%s)' % d for d in dead))

    def run(self, argv, env=None, check=True, cwd=None, timeout=600):
        self.note('$ ' + self._mask(' '.join(argv)))
        proc = subprocess.run(argv, env=dict(os.environ, **(env or {})),
                              cwd=cwd, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=timeout)
        if check and proc.returncode:
            raise Failure('%s exited %d:\n%s\n%s' % (
                self._mask(' '.join(argv)), proc.returncode,
                self._mask(proc.stdout[-3000:]),
                self._mask(proc.stderr[-3000:])))
        return proc

    def note(self, text):
        line = '%s %s' % (time.strftime('%H:%M:%S'), text)
        print(line, flush=True)
        with open(os.path.join(self.logs, 'deploy.log'), 'a') as f:
            f.write(line + '\n')

    def phase(self, name, func, *args):
        self.note('== %s' % name)
        self.current_phase = name
        start = time.monotonic()
        result = func(*args)
        self.current_phase = None
        elapsed = time.monotonic() - start
        self.timings.append((name, elapsed))
        self.note('== %s took %.0f s' % (name, elapsed))
        return result

    def wait_for(self, what, pred, timeout=120, interval=1.0):
        deadline = time.monotonic() + timeout
        while True:
            self.check_alive()
            result = pred()
            if result:
                return result
            if time.monotonic() > deadline:
                raise Failure('timed out after %d s waiting for %s' % (
                    timeout, what))
            time.sleep(interval)

    def wait_http(self, url, timeout=120):
        def up():
            try:
                urllib.request.urlopen(url, timeout=5).close()
                return True
            except urllib.error.HTTPError:
                return True
            except OSError:
                return False
        self.wait_for(url, up, timeout)

    def wait_log(self, path, text, timeout=120, offset=0):
        def found():
            with open(path, errors='replace') as f:
                f.seek(offset)
                return text in f.read()
        self.wait_for('%r in %s' % (text, path), found, timeout)
