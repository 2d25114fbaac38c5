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
"""The benchmark's verdicts: a target that judged nothing has not passed.

They work on the results dict the benchmark writes; here it is written by
hand, with no placement and no nova.
"""

from benchmarks import stats
from benchmarks import tables
from benchmarks import targets
from tests.unit import base

DEFAULT = targets.DEFAULT_STRATEGY


def _cell(strategy=DEFAULT, phase='main', n=targets.RATIO_N, **values):
    cell = {'phase': phase, 'n': n, 'case': 'root', 'strategy': strategy,
            'requests_max': 2, 'mismatch': False, 'version_requests': 0,
            'nova_ratio': 2 * targets.MIN_NOVA_RATIO, 'overhead': 1.0}
    cell.update(values)
    return cell


def _results(cells=(), audit_runs=()):
    return {'rebuild': list(cells), 'growth': [],
            'config': {'background': 200, 'grow_to': 2000},
            'audit': {'status': 'measured', 'runs': list(audit_runs)}}


#: The targets that judge cells, by name in this module.
JUDGES = {
    'requests': targets.target_requests,
    'nova ratio': targets.target_nova_ratio,
    'growth': targets.target_growth,
    'overhead': targets.target_overhead,
    'audit': targets.target_audit,
}


class PendingTest(base.TestCase):

    def statuses(self, results):
        return {name: judge(results)['status']
                for name, judge in JUDGES.items()}

    def test_no_cell_is_pending(self):
        results = _results()
        self.assertEqual(dict.fromkeys(JUDGES, 'pending'),
                         self.statuses(results))
        verdicts = [judge(results) for judge in JUDGES.values()]
        self.assertEqual(verdicts, targets.missed(verdicts))
        self.assertEqual(['PENDING'] * len(JUDGES),
                         [row[1] for row in tables.target_rows(verdicts)[1]])

    def test_cells_of_other_strategies_only_are_pending(self):
        # The default's targets judge the default's cells; the requests'
        # count of every strategy agrees, but that alone does not pass.
        results = _results([_cell('reject'), _cell('root_traits')])
        statuses = self.statuses(results)
        self.assertEqual('pending', statuses['requests'])
        self.assertEqual('pending', statuses['nova ratio'])
        self.assertEqual('pass', statuses['overhead'])

    def test_cells_elsewhere_are_pending(self):
        # No cell at the N of the nova ratio, none in the main phase.
        results = _results([_cell(n=0), _cell(phase='grown')])
        statuses = self.statuses(results)
        self.assertEqual('pending', statuses['nova ratio'])
        self.assertEqual('pass', statuses['requests'])

    def test_judged_cells_pass(self):
        results = _results(
            [_cell()], [{'strategy': DEFAULT, 'servers': 1000,
                         'hosts': 100, 'requests': 200}])
        self.assertEqual(
            {'requests': 'pass', 'nova ratio': 'pass', 'growth': 'pending',
             'overhead': 'pass', 'audit': 'pass'}, self.statuses(results))

    def test_a_missed_cell_fails(self):
        results = _results([_cell(requests_max=targets.MAX_REQUESTS + 1,
                                  nova_ratio=1.0, overhead=2.0)])
        statuses = self.statuses(results)
        self.assertEqual(['fail'] * 3, [statuses['requests'],
                                        statuses['nova ratio'],
                                        statuses['overhead']])

    def test_a_failure_with_no_cell_judged_fails(self):
        # A disagreeing count in another strategy's cell is a failure
        # even before a cell of the default was measured.
        results = _results([_cell('root_traits', mismatch=True)])
        verdict = targets.target_requests(results)
        self.assertEqual('fail', verdict['status'])
        self.assertEqual(0, verdict['checked'])


class TestBalancedOrder(base.TestCase):
    """The growth phases' order takes each size's samples at one mean time."""

    def test_even_cycles_balance_the_mean_position(self):
        for cycles in (2, 4, 6):
            slots = [phase for order in stats.balanced_order(cycles, 'A', 'B')
                     for phase in order]
            mean = {}
            for phase in ('A', 'B'):
                times = [t for t, p in enumerate(slots) if p == phase]
                mean[phase] = sum(times) / len(times)
            self.assertEqual(mean['A'], mean['B'], slots)

    def test_the_size_changes_once_per_cycle(self):
        slots = [phase for order in stats.balanced_order(4, 'A', 'B')
                 for phase in order]
        self.assertEqual(list('ABBAABBA'), slots)


class TestPairedRatio(base.TestCase):
    """A cell's overhead pairs each decision with its own bare replay."""

    def test_drift_between_pairs_cancels(self):
        # The machine slows down threefold halfway: each decision costs
        # 1.1x its own replay, but either side's median alone straddles
        # the change.
        pairs = [(1.1 * scale, 1.0 * scale) for scale in [1.0] * 5 + [3.0] * 6]
        self.assertAlmostEqual(1.1, stats.paired_ratio(pairs))


class TestPrecheckTarget(base.TestCase):
    """The pre-check's cost beside nova's own accepted rebuild."""

    def _precheck(self, **values):
        pre = {'status': 'measured', 'rounds': targets.MIN_PRECHECK_ROUNDS,
               'runs': targets.MIN_PRECHECK_ROUNDS, 'ratio': 1.05,
               'refused_ratio': 0.6, 'accepted_without_ms': 170.0,
               'accepted_with_ms': 178.0, 'added_ms': 8.0,
               'refused_ms': 100.0}
        pre.update(values)
        return targets.target_precheck({'precheck': pre})

    def test_not_measured_is_pending(self):
        for results in ({}, {'precheck': {'status': 'failed',
                                          'detail': ['timed out']}}):
            verdict = targets.target_precheck(results)
            self.assertEqual('pending', verdict['status'])
            self.assertEqual([verdict], targets.missed([verdict]))

    def test_within_both_limits_passes(self):
        self.assertEqual('pass', self._precheck()['status'])
        self.assertEqual('pass', self._precheck(ratio=1.1,
                                                refused_ratio=1.0)['status'])

    def test_each_limit_and_too_few_rounds_fail(self):
        for values, failure in (
                ({'ratio': 1.2}, 'accepted: 1.20x'),
                ({'refused_ratio': 1.3}, 'refused: 1.30x'),
                ({'rounds': 3}, '3 rounds, fewer than 15')):
            verdict = self._precheck(**values)
            self.assertEqual('fail', verdict['status'], values)
            self.assertEqual([failure], verdict['failures'])

    def test_a_moved_generation_is_said_not_judged(self):
        # The target is the quiet host's; a busy host's rebuilds, which
        # find the node's generation moved, are reported beside it.
        verdict = self._precheck(moved_ratio=1.4)
        self.assertEqual('pass', verdict['status'])
        self.assertIn("after the node's generation moved 1.40x (not judged)",
                      verdict['detail'])
        self.assertNotIn('moved', self._precheck()['detail'])
