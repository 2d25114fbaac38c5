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
"""RESULTS.md written again keeps its hand-written sections."""

from benchmarks import report
from tests.unit import base

GENERATED = ('# Benchmark results\n\nThe last run.\n\n## Machine\n\n'
             '- nproc: 2\n\n## Verdict\n\nAll targets met.\n\n'
             '### Rebuild decisions\n\n| a |\n')
LOAD = ('## Load run (Rally)\n\n%s\n\n| configuration | p50 |\n'
        '| --- | --- |\n| hook alone | 90 |\n\n### Checks\n\nnothing left'
        % report.HAND_WRITTEN)
OLD = ('# Benchmark results\n\n## Machine\n\n- nproc: 1\n\n'
       '## Runs of this code\n\nNot marked, so generated again.\n\n'
       + LOAD + '\n\n## Verdict\n\n- FAIL: old\n')


class TestKeepHandWritten(base.TestCase):

    def test_marked_sections_with_their_subsections(self):
        self.assertEqual([LOAD], report.hand_written_sections(OLD))

    def test_no_marked_section(self):
        self.assertEqual([], report.hand_written_sections(GENERATED))
        self.assertEqual(GENERATED,
                         report.keep_hand_written(GENERATED, GENERATED))

    def test_kept_before_the_verdict_of_the_new_file(self):
        new = report.keep_hand_written(GENERATED, OLD)
        self.assertEqual(
            GENERATED.replace('## Verdict', LOAD + '\n\n## Verdict'), new)
        self.assertNotIn('Not marked', new)
        self.assertNotIn('nproc: 1', new)
        # Written again, it stays once.
        self.assertEqual(new, report.keep_hand_written(new, new))
        self.assertEqual(new, report.keep_hand_written(GENERATED, new))

    def test_without_a_verdict_at_the_end(self):
        new = report.keep_hand_written('# Benchmark results\n', OLD)
        self.assertEqual('# Benchmark results\n\n' + LOAD + '\n', new)
