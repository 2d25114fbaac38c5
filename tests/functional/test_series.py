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
"""The package on every maintained series (nova_image_traits.series).

* It resolves with each series' nova and placement under that series'
  upper-constraints, as a deployment tool installs it
  (``pip install --dry-run``, from the package index).
* This environment holds the nova and placement of the series tox set up
  (``NIT_SERIES``), and runs the concurrency model that series' services
  run by default: eventlet up to 2026.1, native threads from 2026.2.
* The placement client's worker threads (their deadline and their reset
  in a forked child) hold under both models, each in its own interpreter,
  since a process cannot undo eventlet's monkey patching.
"""

import importlib.metadata
import json
import os
import sys

import fixtures
import testtools

from nova_image_traits import series
from tests.functional import test_packaging

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def _constraints(name):
    return os.path.join(TOP, 'constraints', 'upper-constraints-%s.txt' % name)


def _run(cmd, timeout=600, env=None):
    return test_packaging._run(cmd, TOP, env=env, timeout=timeout)


class TestResolves(testtools.TestCase):
    """``pip install --dry-run -c <series upper-constraints> .``

    A dry run asks the package index, not this environment, so it runs in
    one environment only: the newest series' (``tox -e functional``, the
    default). Each of the four resolutions takes 10 to 20 seconds.
    """

    def setUp(self):
        super().setUp()
        newest = series.SUPPORTED[-1].name
        if os.environ.get('NIT_SERIES', newest) != newest:
            self.skipTest('the dry runs do not depend on the installed '
                          'series: they run in the %s environment' % newest)

    def resolve(self, name):
        s = {x.name: x for x in series.SUPPORTED}[name]
        report = os.path.join(self.useFixture(fixtures.TempDir()).path,
                              'report.json')
        _run([sys.executable, '-m', 'pip', 'install', '--quiet',
              '--dry-run', '--ignore-installed', '--report', report,
              '-c', _constraints(name), '.',
              'nova>=%d.0.0,<%d' % (s.nova, s.nova + 1),
              'openstack-placement>=%d.0.0,<%d' % (s.placement,
                                                   s.placement + 1)])
        with open(report) as f:
            got = {i['metadata']['name'].lower(): i['metadata']['version']
                   for i in json.load(f)['install']}
        self.assertIn('nova-image-traits', got)
        self.assertEqual(s.nova, int(got['nova'].split('.')[0]))
        self.assertEqual(s.placement,
                         int(got['openstack-placement'].split('.')[0]))
        return got

    def test_2025_1(self):
        got = self.resolve('2025.1')
        # The three pins our bounds once exceeded.
        self.assertEqual('5.4.1', got['stevedore'])
        self.assertEqual('5.10.0', got['keystoneauth1'])
        self.assertEqual('3.3.0', got['os-traits'])

    def test_2025_2(self):
        self.resolve('2025.2')

    def test_2026_1(self):
        got = self.resolve('2026.1')
        self.assertEqual('3.6.0', got['os-traits'])

    def test_2026_2(self):
        self.resolve('2026.2')


_WORKER_TESTS = r'''
import json
import sys
import unittest

if sys.argv[1] == 'eventlet':
    import eventlet
    eventlet.monkey_patch()

import threading

from tests.unit import test_placement
from tests.unit import test_workers

loader = unittest.defaultTestLoader
suite = unittest.TestSuite([loader.loadTestsFromModule(test_workers),
                            loader.loadTestsFromModule(test_placement)])
result = unittest.TextTestRunner(stream=sys.stderr, verbosity=2).run(suite)
try:
    from eventlet import patcher
    green = patcher.is_monkey_patched('thread')
except ImportError:
    green = False
print(json.dumps({'run': result.testsRun, 'skipped': len(result.skipped),
                  'failed': len(result.failures) + len(result.errors),
                  'green_threads': green,
                  'thread_module': threading.Lock.__module__}))
'''


class TestWorkerThreadsUnderBothModels(testtools.TestCase):
    """The worker-thread and deadline unit tests under each model.

    ``tests/unit/test_workers.py`` and ``test_placement.py``, each model in
    a fresh interpreter.
    """

    def run_model(self, model):
        env = {k: v for k, v in os.environ.items()
               if k != 'OS_NOVA_DISABLE_EVENTLET_PATCHING'}
        out = _run([sys.executable, '-c', _WORKER_TESTS, model], env=env)
        result = json.loads(out.strip().splitlines()[-1])
        self.assertEqual(0, result['failed'], result)
        self.assertGreater(result['run'], 40, result)
        self.assertEqual(0, result['skipped'], result)
        return result

    def test_native_threads(self):
        self.assertFalse(self.run_model('threads')['green_threads'])

    def test_eventlet(self):
        self.assertTrue(self.run_model('eventlet')['green_threads'])


class TestThisEnvironment(testtools.TestCase):
    """What tox installed is the series it says (``NIT_SERIES``)."""

    def setUp(self):
        super().setUp()
        name = os.environ.get('NIT_SERIES')
        if not name:
            self.skipTest('NIT_SERIES is set by the tox functional '
                          'environments')
        self.series = {s.name: s for s in series.SUPPORTED}[name]

    def test_nova_and_placement_of_the_series(self):
        nova = importlib.metadata.version('nova')
        placement = importlib.metadata.version('openstack-placement')
        self.assertEqual(self.series, series.of_nova(nova))
        self.assertEqual(self.series.placement,
                         int(placement.split('.')[0]))

    def test_concurrency_model_of_the_series(self):
        # Importing nova's functional test package makes the decision
        # nova's services make by default.
        import tests.functional.nova  # noqa
        # NOTE: not imported here: in native threading mode nova 33 and
        # later refuse any import of eventlet.
        patcher = sys.modules.get('eventlet.patcher')
        green = bool(patcher and patcher.is_monkey_patched('thread'))
        # NOTE(series 2025.1, 2025.2, 2026.1): eventlet by default;
        # 2026.2 on native threads.
        self.assertEqual(self.series.nova < 34, green)
