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

Nova's functional harness runs nova-api, the conductor with the hook, the
scheduler and a fake-driver compute, with an in-process placement, twice:
without the pre-check in ``api-paste.ini`` and with it. Each run times
``POST /servers/{id}/action`` rebuilds that nova accepts (``202``; the
time to the answer, not to the rebuilt server), alternating two images
that require a trait the host has, so that every rebuild changes the
image and is decided; with the pre-check it also times rebuilds the
pre-check refuses (``400``). The difference of the accepted medians is
what the pre-check adds to a rebuild the user waits for.
"""

import io
import json
import os
import statistics
import subprocess
import sys
import time
import unittest


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


def _case(with_precheck, runs, results):
    test_precheck = prepare()

    class Timing(test_precheck.APIPrecheckTest):
        ENABLE_API_PRECHECK = with_precheck

        def runTest(self):
            images = [self.create_image(required=[test_precheck.GOLD])
                      for _i in range(2)]
            refused_image = self.create_image(
                required=[test_precheck.ABSENT[0]])
            accepted, refused = [], []
            for i in range(runs):
                start = time.perf_counter()
                self.api.post_server_action(
                    self.server['id'],
                    {'rebuild': {'imageRef': images[i % 2]}})
                accepted.append(time.perf_counter() - start)
                self.server = self.wait_until_settled(self.server)
                self.assertEqual('ACTIVE', self.server['status'])
            if with_precheck:
                for _i in range(runs):
                    start = time.perf_counter()
                    resp = self._rebuild_refused(refused_image)
                    refused.append(time.perf_counter() - start)
                    self.assertEqual(400, resp.status_code)
            results[with_precheck] = {
                'accepted_ms': statistics.median(accepted) * 1000.0,
                'refused_ms': (statistics.median(refused) * 1000.0
                               if refused else None),
                'runs': runs}

    return Timing()


def measure(runs=15):
    """Return the pre-check's measured cost, or why it could not be."""
    results = {}
    for with_precheck in (False, True):
        out = io.StringIO()
        outcome = unittest.TextTestRunner(stream=out, verbosity=0).run(
            _case(with_precheck, runs, results))
        if not outcome.wasSuccessful():
            errors = outcome.errors + outcome.failures
            return {'status': 'failed',
                    'detail': [line for _test, text in errors
                               for line in text.strip().splitlines()[-3:]]}
    without, with_ = results[False], results[True]
    return {'status': 'measured', 'runs': runs,
            'accepted_without_ms': without['accepted_ms'],
            'accepted_with_ms': with_['accepted_ms'],
            'added_ms': with_['accepted_ms'] - without['accepted_ms'],
            'refused_ms': with_['refused_ms']}


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
