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
"""The nova-api pre-check's cost per rebuild, through nova's own API.

Nova's functional harness runs nova-api with the pre-check in its
``api-paste.ini``, the conductor with the hook, the scheduler and a
fake-driver compute. Where the harness keeps placement's database in a
file (nova 34's native threads), the pre-check's placement requests go to
placement served from a process of its own on that database
(:mod:`benchmarks.placement_process`), as in a deployment; otherwise to
the harness's in-process placement. Each round times
``POST /servers/{id}/action`` rebuilds that nova accepts (``202``; the
time to the answer, not to the rebuilt server) twice: once decided by the
pre-check, once by nova alone (the paste filter's mark is withheld, so
``API.rebuild`` runs unwrapped), in alternating order (A B, then B A), and
one rebuild decided by the pre-check after the compute node's provider
generation moved (a trait of the node's changed since the last one, so
the node's traits are asked again, after the allocations: what a busy
host's rebuilds cost, :mod:`nova_image_traits.placement.known_traits`),
and one rebuild the pre-check refuses (``400``). Each accepted rebuild changes
the image to one that requires a trait the host has, so it is decided, and
waits for the server to settle before the next. A round's ratio is its
decided rebuild over nova's alone: the median of the rounds' ratios is
what the pre-check adds, robust to a shared machine's noise. Both run at
nova's default log level (INFO), as a deployed nova-api does, not at the
harness's DEBUG.
"""

import io
import json
import logging
import os
import statistics
import subprocess
import sys
import threading
import time
import unittest

import fixtures

#: A trait that comes and goes on the compute node, moving its generation.
CHURN = 'CUSTOM_NIT_BENCH_CHURN'


def prepare():
    """Import nova's harness; call it before nova's configuration is parsed.

    ``nova.test`` registers command line options when it is imported,
    which oslo.config refuses once the benchmark's nova check has parsed
    nova's configuration.
    """
    # NOTE(founders): imported here: the test tooling lives in the repository,
    # not in the installed package, and importing it sets nova's threading.
    from tests.functional.nova import test_precheck
    return test_precheck


class _ServerCPU:
    """CPU time placement's WSGI handler spends, in every thread.

    In nova's harness placement serves in nova-api's own process, so its
    server work for the pre-check's requests competes with nova for the
    GIL; in a deployment it runs elsewhere. Counted to say how much of the
    pre-check's cost here is placement's own.
    """

    def __init__(self):
        self.total = 0.0
        self._lock = threading.Lock()

    def patch(self):
        from placement import handler
        real = handler.PlacementHandler.__call__
        counter = self

        def call(app, environ, start_response):
            started = time.thread_time()
            try:
                return real(app, environ, start_response)
            finally:
                with counter._lock:
                    counter.total += time.thread_time() - started
        return fixtures.MockPatchObject(handler.PlacementHandler,
                                        '__call__', call)


def _case(rounds, results):
    test_precheck = prepare()
    from nova_image_traits.api import rebuild_wrapper
    cpu = _ServerCPU()

    class Timing(test_precheck.APIPrecheckTest):

        def setUp(self):
            super().setUp()
            self.useFixture(cpu.patch())
            # NOTE(founders): nova's harness (StandardLogging) sets the root
            # logger to DEBUG and formats every debug message, to check
            # their syntax; a deployed nova-api (``[DEFAULT] debug =
            # False``) skips them, and the benchmark's other phases run
            # with the root logger at ERROR (run._quiet). Measured here at
            # nova's default level, INFO, for both arms alike.
            logging.getLogger().setLevel(logging.INFO)

        def _point_placement_at(self, fixture):
            super()._point_placement_at(fixture)
            url = fixture.conf_fixture.conf.placement_database.connection
            if not url.startswith('sqlite:///'):
                return  # in memory (eventlet): placement stays in-process
            from benchmarks import placement_process
            proc, endpoint = placement_process.start(url)
            self.addCleanup(placement_process.stop, proc)
            self.flags(endpoint=endpoint, endpoint_override=endpoint,
                       group='placement')
            results['placement'] = 'own process'

        def _accepted(self, image, decided, server_cpu=None):
            patch = (fixtures.MockPatchObject(rebuild_wrapper, 'mark')
                     if not decided else fixtures.Fixture())
            with patch:
                before = cpu.total
                start = time.perf_counter()
                self.api.post_server_action(
                    self.server['id'], {'rebuild': {'imageRef': image}})
                took = time.perf_counter() - start
                if server_cpu is not None:
                    server_cpu.append(cpu.total - before)
            self.server = self.wait_until_settled(self.server)
            self.assertEqual('ACTIVE', self.server['status'])
            return took

        def runTest(self):
            images = [self.create_image(required=[test_precheck.GOLD])
                      for _i in range(2)]
            refused_image = self.create_image(
                required=[test_precheck.ABSENT[0]])
            nova, decided, moved, refused, server_cpu = [], [], [], [], []

            def image():
                return images[(len(nova) + len(decided) + len(moved)) % 2]
            # A warm-up of each, not counted.
            self._accepted(images[0], False)
            self._accepted(images[1], True)
            for i in range(rounds):
                for with_precheck in ((False, True) if i % 2 else
                                      (True, False)):
                    took = self._accepted(
                        image(), with_precheck,
                        server_cpu if with_precheck else None)
                    (decided if with_precheck else nova).append(took)
                # The node's generation moves (an operator's trait comes or
                # goes), as any change on a busy host moves it.
                self.set_traits(self.root, [test_precheck.GOLD] + (
                    [CHURN] if i % 2 == 0 else []))
                moved.append(self._accepted(image(), True))
                start = time.perf_counter()
                resp = self._rebuild_refused(refused_image)
                refused.append(time.perf_counter() - start)
                self.assertEqual(400, resp.status_code)
            results.update(_summary(nova, decided, refused))
            results['moved_ms'] = statistics.median(moved) * 1000.0
            results['moved_ratio'] = statistics.median(
                m / n for m, n in zip(moved, nova))
            results['placement_cpu_ms'] = (
                statistics.median(server_cpu) * 1000.0)
            # What the rounds' ratios would be with placement's own
            # server work elsewhere, as in a deployment (an estimate).
            results['ratio_placement_elsewhere'] = statistics.median(
                (d - c) / n for d, c, n in zip(decided, server_cpu, nova))

    return Timing()


def _summary(nova, decided, refused):
    """Medians and the medians of the rounds' paired ratios."""
    def ms(values):
        return statistics.median(values) * 1000.0
    return {
        'rounds': len(nova),
        'accepted_without_ms': ms(nova),
        'accepted_with_ms': ms(decided),
        'added_ms': ms(decided) - ms(nova),
        'ratio': statistics.median(d / n for d, n in zip(decided, nova)),
        'refused_ms': ms(refused),
        'refused_ratio': statistics.median(
            r / n for r, n in zip(refused, nova)),
        'ratios': [round(d / n, 3) for d, n in zip(decided, nova)],
    }


def measure(runs=15):
    """Return the pre-check's measured cost, or why it could not be.

    :param runs: rounds, each of one rebuild decided by the pre-check, one
        by nova alone, and one refusal
    """
    results = {'placement': 'in-process'}
    out = io.StringIO()
    outcome = unittest.TextTestRunner(stream=out, verbosity=0).run(
        _case(runs, results))
    if not outcome.wasSuccessful():
        errors = outcome.errors + outcome.failures
        return {'status': 'failed',
                'detail': [line for _test, text in errors
                           for line in text.strip().splitlines()[-3:]]}
    load = os.getloadavg()[0] if hasattr(os, 'getloadavg') else None
    return dict(results, status='measured', runs=runs, load=load)


if __name__ == '__main__':
    prepare()
    logging.getLogger().handlers[:] = []
    logging.getLogger().setLevel(logging.ERROR)
    print(json.dumps(measure(int(sys.argv[1]) if len(sys.argv) > 1
                             else 15), indent=1))


def measure_in_subprocess(runs=15, timeout=900):
    """:func:`measure` in a fresh interpreter.

    Nova's harness needs nova's global configuration unparsed and nova's
    threading chosen first; the benchmark's own nova check has done both
    its way by then, so the harness runs in a process of its own.
    """
    env = dict(os.environ, OS_NOVA_DISABLE_EVENTLET_PATCHING='1')
    code = ('import json, logging\n'
            'from benchmarks import precheck\n'
            'precheck.prepare()\n'
            'logging.getLogger().handlers[:] = []\n'
            'logging.getLogger().setLevel(logging.ERROR)\n'
            'print("RESULT " + json.dumps(precheck.measure(%d)))\n' % runs)
    try:
        proc = subprocess.run([sys.executable, '-c', code], env=env,
                              capture_output=True, text=True,
                              timeout=timeout,
                              cwd=os.path.dirname(os.path.dirname(
                                  os.path.abspath(__file__))))
    except subprocess.TimeoutExpired:
        return {'status': 'failed', 'detail': ['timed out']}
    for line in proc.stdout.splitlines():
        if line.startswith('RESULT '):
            return json.loads(line[len('RESULT '):])
    return {'status': 'failed',
            'detail': (proc.stderr or proc.stdout).strip().splitlines()[-3:]}
