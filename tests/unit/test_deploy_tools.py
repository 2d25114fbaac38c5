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
"""The deployment job's tables of expectations (tools/deploy/)."""

import importlib.util
import os
import sys

import fixtures
import testtools

from nova_image_traits.conf import image_traits

TOOLS = os.path.join(os.path.dirname(__file__), '..', '..', 'tools',
                     'deploy')


def _load(name):
    spec = importlib.util.spec_from_file_location(
        'nit_deploy_' + name, os.path.join(TOOLS, name + '.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class ExpectationsTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.exp = _load('expectations')

    def test_every_strategy_has_a_full_row(self):
        # A new strategy fails here until the deployment knows what it
        # must decide.
        for strategy in image_traits.STRATEGIES:
            row = self.exp.expectations_for([strategy])[strategy]
            self.assertEqual(
                set(self.exp.CASES) | {'asks_placement'}, set(row),
                strategy)
            for case in self.exp.CASES:
                self.assertIn(row[case], (self.exp.ACCEPT, self.exp.REFUSE))

    def test_unknown_strategy_fails_loudly(self):
        e = self.assertRaises(SystemExit, self.exp.expectations_for,
                              ['root_traits', 'held_elsewhere'])
        self.assertIn('no row for the strategies held_elsewhere', str(e))
        self.assertIn('tools/deploy/expectations.py', str(e))

    def test_cases_every_strategy_agrees_on(self):
        for strategy, row in self.exp.EXPECTED.items():
            self.assertEqual(self.exp.REFUSE, row['absent'], strategy)
            self.assertEqual(self.exp.ACCEPT, row['plain'], strategy)
            self.assertEqual(self.exp.REFUSE, row['placement_down'],
                             strategy)
            # Refused before nova asks cinder to reimage: the deployment's
            # cinder backend holds files, not bootable disks.
            self.assertEqual(self.exp.REFUSE, row['volume_backed'],
                             strategy)


class _ToolsTest(testtools.TestCase):
    """Loads the deployment tools as deploy.py runs them."""

    def setUp(self):
        super().setUp()
        self.exp = _load('expectations')
        # The tools import the modules beside them by name, as they do
        # when deploy.py runs them.
        self.useFixture(fixtures.MonkeyPatch('sys.path',
                                             [TOOLS] + sys.path))
        for name in os.listdir(TOOLS):
            if name.endswith('.py'):
                self.addCleanup(sys.modules.pop, name[:-3], None)
        self.checks = _load('rebuild_checks')


class FilterAloneTest(_ToolsTest):
    """The refusals by ImageTraitsFilter alone agree with the table."""

    def setUp(self):
        super().setUp()
        self.filter_alone = _load('filter_alone')

    def test_the_conductor_accepts_and_the_filter_refuses(self):
        for server, case, conductors, filter_strategy in (
                self.filter_alone.FILTER_ALONE):
            self.assertIn(case, self.exp.CASES)
            self.assertEqual(server,
                             self.checks.CASE_SERVER.get(case, 'a'))
            self.assertEqual(self.exp.REFUSE,
                             self.exp.EXPECTED[filter_strategy][case])
            if conductors is not None:
                self.assertEqual(self.exp.ACCEPT,
                                 self.exp.EXPECTED[conductors][case])

    def test_with_and_without_the_hook(self):
        hooks = [c is not None for _s, _c, c, _f in
                 self.filter_alone.FILTER_ALONE]
        self.assertEqual([True, False], sorted(hooks, reverse=True))


class LoadRunTest(_ToolsTest):
    """The load run's configurations agree with the table; its figures."""

    def setUp(self):
        super().setUp()
        self.load = _load('load_run')
        self.figures = _load('load_figures')

    def test_accepted_and_refused_as_the_table_says(self):
        # Every server is on compute2, the nested case's host.
        self.assertEqual('compute2', self.load.HOST)
        self.assertEqual('b', self.checks.CASE_SERVER['nested'])
        for label in self.load.ORDER:
            conf = self.load.CONFIGS[label]
            for image in conf['accepted']:
                if image.startswith('plain'):
                    continue
                for strategy in (conf['strategy'], conf['scheduler']):
                    self.assertEqual(self.exp.ACCEPT,
                                     self.exp.EXPECTED[strategy][image])
            # The hook refuses, or it accepts and the filter refuses.
            refused = conf['refused']
            hook = self.exp.EXPECTED[conf['strategy']][refused]
            sched = self.exp.EXPECTED[conf['scheduler']][refused]
            if label == 'filter alone':
                self.assertEqual((self.exp.ACCEPT, self.exp.REFUSE),
                                 (hook, sched))
                self.assertFalse(conf['precheck'])
            else:
                self.assertEqual(self.exp.REFUSE, hook)
            self.assertEqual('precheck' if conf['precheck'] else 'error',
                             conf['refusal'])

    def test_percentiles(self):
        values = [0.5, 0.1, 0.3, 0.2, 0.4]
        self.assertEqual(0.3, self.figures.percentile(values, 50))
        self.assertAlmostEqual(0.48, self.figures.percentile(values, 95))
        self.assertEqual(0.7, self.figures.percentile([0.7], 95))

    def test_atomic_durations_and_errors(self):
        def it(error, *actions):
            return {'error': error, 'atomic_actions': [
                {'name': n, 'started_at': 10.0, 'finished_at': 10.0 + d}
                for n, d in actions]}
        report = {'tasks': [{'subtasks': [{'workloads': [{'data': [
            it([], ('nit.rebuild_accepted', 0.25),
               ('nit.rebuild_refused', 0.5)),
            it(['UnexpectedResult', 'boom'],
               ('nit.rebuild_accepted', 0.75))]}]}]}]}
        durations, errors = self.figures.atomic_durations(report)
        self.assertEqual({'nit.rebuild_accepted': [0.25, 0.75],
                          'nit.rebuild_refused': [0.5]}, durations)
        self.assertEqual([['UnexpectedResult', 'boom']], errors)

    def test_table(self):
        path = self.useFixture(fixtures.TempDir()).join('t.md')
        row = {'rc': 0, 'errors': [], 'problems': [], 'load': (1.0, 2.5),
               'nit.rebuild_accepted': {'n': 2, 'p50': 0.5, 'p95': 0.75},
               'nit.rebuild_refused': {'n': 2, 'p50': 0.25, 'p95': 0.3}}
        bad = dict(row, rc=2, errors=[['E']], problems=['x is error'])
        table = self.figures.write_table(
            path, {'servers': 2, 'concurrency': 1, 'times': 2},
            {'hook alone': row, 'precheck+hook': bad},
            {'hook alone': 'error', 'precheck+hook': 'precheck'})
        with open(path) as f:
            self.assertEqual(table + '\n', f.read())
        lines = table.splitlines()
        self.assertEqual('| hook alone | ERROR | 500 / 750 (n=2) | '
                         '250 / 300 (n=2) | 0 | nothing | 1.0 to 2.5 |',
                         lines[-2])
        self.assertEqual('| precheck+hook | 400 | 500 / 750 (n=2) | '
                         '250 / 300 (n=2) | 1 (rally exited 2) | x is error '
                         '| 1.0 to 2.5 |', lines[-1])


class FailureTest(_ToolsTest):
    """A failed job says what failed; MariaDB's bootstrap is tried twice."""

    def setUp(self):
        super().setUp()
        self.processes = _load('processes')
        self.infrastructure = _load('infrastructure')
        self.data = self.useFixture(fixtures.TempDir()).join('data')

    def _infrastructure(self, outcomes):
        """An Infrastructure whose commands end as ``outcomes`` say."""
        failure = sys.modules['processes'].Failure
        test = self

        class Fake(self.infrastructure.Infrastructure):
            def __init__(self):
                self.ran, self.notes, self.got_over = [], [], []

            def run(self, argv):
                # What a failed bootstrap leaves behind: the next must
                # start without it.
                test.assertFalse(os.path.exists(test.data))
                os.makedirs(os.path.join(test.data, 'mysql'))
                self.ran.append(argv)
                if outcomes.pop(0):
                    raise failure('%s exited 1:\n\nInstallation of system '
                                  'tables failed!' % argv[0])

            def note(self, text):
                self.notes.append(text)
        return Fake()

    def test_bootstrap_failed_once(self):
        infra = self._infrastructure([True, False])
        infra.install_mariadb_db(self.data)
        self.assertEqual(2, len(infra.ran))
        self.assertEqual(infra.ran[0], infra.ran[1])
        self.assertIn('--skip-name-resolve', infra.ran[0])
        self.assertIn('--datadir=' + self.data, infra.ran[0])
        self.assertEqual(1, len(infra.notes))
        self.assertIn('Installation of system tables failed!',
                      infra.notes[0])
        # The job's last line will say so, even when it passes.
        self.assertEqual(["MariaDB's bootstrap failed once: "
                          'mariadb-install-db exited 1: ... Installation '
                          'of system tables failed!'], infra.got_over)

    def test_bootstrap_failed_twice(self):
        infra = self._infrastructure([True, True])
        e = self.assertRaises(sys.modules['processes'].Failure,
                              infra.install_mariadb_db, self.data)
        self.assertIn('Installation of system tables failed!', str(e))
        self.assertEqual(2, len(infra.ran))

    def test_summary_names_the_first_line_the_last_and_the_phase(self):
        summary = self.processes.summary
        e = self.processes.Failure(
            'mariadb-install-db --datadir=x exited 1:\n\n'
            'Installation of system tables failed!  Examine the logs\n'
            '  2026-12-07  [ERROR] InnoDB: cannot open ibdata1\n\n')
        self.assertEqual(
            'mariadb-install-db --datadir=x exited 1: ... 2026-12-07  '
            '[ERROR] InnoDB: cannot open ibdata1, in mariadb',
            summary(e, 'mariadb'))
        self.assertEqual('port 1 is in use, in no phase (between two)',
                         summary(self.processes.Failure('port 1 is in use'),
                                 None))
        self.assertEqual('KeyError, in tempest', summary(KeyError(),
                                                         'tempest'))
        # deploy.py's SIGTERM handler.
        self.assertEqual('stopped by signal 15, in tempest',
                         summary(SystemExit(143), 'tempest'))
