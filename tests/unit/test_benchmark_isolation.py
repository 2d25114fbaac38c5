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
"""The benchmark's count of aggregate isolation's placement requests.

Its cells, table and targets work on the decisions' samples and on the
results dict; here both are written by hand, with no placement and no
nova.
"""

import sys
import types
from unittest import mock

from benchmarks import isolation
from benchmarks import tables
from benchmarks import targets
from nova_image_traits.reasons import isolation as isolation_reason
from tests.unit import base

DEFAULT = targets.DEFAULT_STRATEGY
CAUSE = isolation_reason.CAUSE


def _sample(requests, outcome='accept', cause=None, recorded=None,
            discovery=False):
    # The fields of benchmarks.rebuild.Sample it reads (that module needs
    # placement).
    return types.SimpleNamespace(
        requests=requests,
        recorded=requests if recorded is None else recorded,
        outcome=outcome, discovery=discovery, cause=cause)


def _cells(strategy=DEFAULT, counts=(2, 3, 1), outcome='accept', n=0,
           case='root', **changes):
    """The cells of one host and case: off, outside and inside."""
    samples = {'off': [_sample(counts[0], outcome)],
               'outside': [_sample(counts[1], outcome)],
               'inside': [_sample(counts[2], 'reject', CAUSE)]}
    cells = [isolation.summarize((n, case, strategy, mode), samples[mode])
             for mode in isolation.MODES]
    for cell in cells:
        cell.update(changes.get(cell['mode'], {}))
    return cells


def _without_nova(test):
    """benchmarks.derive (it needs nova) as a stand-in, in TEST."""
    derive = types.SimpleNamespace(
        target=lambda results, module: module._target('derive', 1, [], ''),
        rows=lambda results: (['derived'], []))
    patcher = mock.patch.dict(sys.modules, {'benchmarks.derive': derive})
    patcher.start()
    test.addCleanup(patcher.stop)


def _results(*cell_lists):
    return {'isolation': {'status': 'measured', 'runs': 1,
                          'cells': [c for cells in cell_lists
                                    for c in cells]}}


class SummarizeTest(base.TestCase):

    def test_a_cell_keeps_the_range_and_what_disagrees(self):
        cell = isolation.summarize((16, 'child', 'tree_traits', 'outside'), [
            _sample(3), _sample(4, recorded=5, discovery=True)])
        self.assertEqual(
            {'n': 16, 'case': 'child', 'strategy': 'tree_traits',
             'mode': 'outside', 'runs': 2, 'outcome': 'accept',
             'cause': '-', 'requests_min': 3, 'requests_max': 4,
             'recorded_max': 5, 'mismatch': True, 'version_requests': 1},
            cell)


class RowsTest(base.TestCase):

    def test_one_row_a_strategy_with_the_range_over_cells(self):
        results = _results(_cells(counts=(2, 3, 1)),
                           _cells(counts=(2, 3, 1), case='missing'),
                           _cells('tree_traits', (1, 3, 1)),
                           _cells('tree_traits', (2, 4, 1), case='missing'))
        headers, rows = isolation.rows(results)
        self.assertEqual(['strategy', 'isolation off', 'on, outside',
                          'on, refused', 'cells (N and case)'], headers)
        self.assertEqual([[DEFAULT, '2', '3', '1', 2],
                          ['tree_traits', '1-2', '3-4', '1', 2]], rows)

    def test_not_measured(self):
        self.assertEqual((['aggregate isolation'], [['not measured']]),
                         isolation.rows({}))

    def test_the_report_has_the_section(self):
        _without_nova(self)
        titles = [title for title, _table in tables.sections(
            dict(_results(_cells()), rebuild=[], nova=[],
                 config={'background': 200, 'grow_to': 2000,
                         'strategies': [DEFAULT]}), [])]
        self.assertIn('Aggregate isolation: placement requests per decision',
                      titles)


class TargetsTest(base.TestCase):

    def verdicts(self, results):
        return (isolation.target_requests(results, targets),
                isolation.target_alike(results, targets))

    def test_the_measured_default_passes(self):
        requests, alike = self.verdicts(_results(
            _cells(), _cells('reject', (0, 2, 1), 'reject')))
        self.assertEqual(('pass', 3), (requests['status'],
                                       requests['checked']))
        self.assertEqual(('pass', 4), (alike['status'], alike['checked']))

    def test_not_measured_is_pending(self):
        for results in ({}, {'isolation': {'status': 'failed',
                                           'detail': 'placement died'}}):
            for verdict in self.verdicts(results):
                self.assertEqual('pending', verdict['status'])
                self.assertIn(verdict, targets.missed([verdict]))

    def test_a_request_added_with_isolation_off_fails(self):
        requests, _alike = self.verdicts(_results(_cells(counts=(3, 3, 1))))
        self.assertEqual('fail', requests['status'])
        self.assertEqual(['N=0 root %s off: 3 requests' % DEFAULT],
                         requests['failures'])

    def test_two_requests_added_with_it_on_fail(self):
        requests, _alike = self.verdicts(_results(_cells(counts=(2, 4, 4))))
        self.assertEqual(['N=0 root %s inside: 4 requests' % DEFAULT,
                          'N=0 root %s outside: 4 requests' % DEFAULT],
                         requests['failures'])

    def test_never_more_than_the_default_may_send(self):
        # One more than with isolation off, and within MAX_REQUESTS.
        requests, _alike = self.verdicts(_results(_cells(counts=(1, 2, 1)),
                                                  _cells(counts=(2, 3, 1),
                                                         case='full')))
        self.assertEqual('pass', requests['status'])
        self.assertEqual(isolation.MAX_OFF + isolation.MAX_EXTRA,
                         targets.MAX_REQUESTS)

    def test_other_strategies_count_only_for_agreement(self):
        # tree_traits adds two requests (it reads no allocations when
        # isolation is off); a disagreeing count fails whoever sent it.
        requests, _alike = self.verdicts(_results(
            _cells('tree_traits', (1, 3, 1)),
            _cells('root_traits', (1, 3, 1),
                   outside={'mismatch': True})))
        self.assertEqual('fail', requests['status'])
        self.assertEqual(0, requests['checked'])
        self.assertEqual(['N=0 root root_traits outside: engine and '
                          'recorder disagree'], requests['failures'])

    def test_a_strategy_judging_otherwise_fails(self):
        _requests, alike = self.verdicts(_results(
            _cells('allocation_traits', outside={'outcome': 'reject'}),
            _cells('reject', (0, 2, 0), 'reject',
                   inside={'cause': '-'})))
        self.assertEqual('fail', alike['status'])
        self.assertEqual(
            ['N=0 root allocation_traits: reject outside, accept off',
             'N=0 root reject: reject (-) inside'], alike['failures'])

    def test_both_are_among_the_benchmark_targets(self):
        _without_nova(self)
        names = [t['name'] for t in targets.evaluate(dict(
            _results(_cells()), rebuild=[], growth=[],
            config={'background': 200, 'grow_to': 2000}))]
        self.assertIn(isolation.target_requests(
            _results(_cells()), targets)['name'], names)
        self.assertIn('every strategy judges aggregate isolation alike',
                      names)
