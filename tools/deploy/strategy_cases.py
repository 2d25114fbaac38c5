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
"""The rebuild cases of ``expectations.py``, with one strategy.

``run_strategy`` rebuilds, as ``demo``, each case's server to each case's
image (the placement_down case with placement stopped), with the
conductors and the scheduler of one strategy, and checks what the row of
that strategy says: the server rebuilt, or refused with nothing of the
refused image left; one decision line in the super conductor (none for
the plain image, none ever in the cell conductor); and one in the
scheduler, by ImageTraitsFilter, for each acceptance but the plain
image's.
"""

from cloud_contents import TRAITS
import expectations
from processes import Failure
from rebuild_checks import CASE_IMAGE
from rebuild_checks import CASE_SERVER

#: What a refusal's fault details must say to an admin, by case; by
#: default the trait. The owner's fault names none of it.
FAULT_NAMES = {'vtpm': 'hw_tpm_version=2.0 needs COMPUTE_SECURITY_TPM_2_0'}


class StrategyCases:
    """Each case's rebuild, and what its strategy must decide."""

    def rebuild(self, strategy, case):
        dep = self.dep
        row = self.table[strategy]
        want = row[case]
        sid = self.servers[CASE_SERVER.get(case, 'a')]
        image = self.images[CASE_IMAGE[case]]
        old_image, db_before = self.before_rebuild(sid, image)
        offsets = self.log_offsets()
        # The client asks for --reimage-boot-volume to rebuild a
        # volume-backed server to another image (compute API 2.93).
        reimage = ['--reimage-boot-volume'] if old_image == '' else []
        dep.osc('demo', 'server', 'rebuild', '--image', image, *reimage, sid)
        self.wait_settled(sid, db_before)
        shown = self.user('server', 'show', sid)
        problems = []
        if want == expectations.ACCEPT:
            if shown['status'] != 'ACTIVE' or self.image_id(shown) != image:
                problems.append('not rebuilt: %s, image %s' % (
                    shown['status'], self.image_id(shown)))
        else:
            named = FAULT_NAMES.get(case) or TRAITS.get(
                CASE_IMAGE[case])
            problems += self.refused(shown, old_image, None)
            if case != 'placement_down':
                problems += self.host_detail(sid, shown, named)
            problems += self.leftovers(sid, db_before, old_image, image)
        # One decision line per rebuild, in the super conductor only; none
        # for an image that requires no trait.
        lines = self.decisions_since('super-conductor',
                                     offsets['super-conductor'])
        cell_lines = self.decisions_since('cell1-conductor',
                                          offsets['cell1-conductor'])
        wanted_lines = 0 if case == 'plain' else 1
        if len(lines) != wanted_lines or cell_lines:
            problems.append('%d decision lines in the super conductor and '
                            '%d in the cell conductor, wanted %d and 0' % (
                                len(lines), len(cell_lines), wanted_lines))
        elif lines:
            d = lines[0]
            allowed = str(want == expectations.ACCEPT)
            if (d.get('strategy') != strategy or d.get('instance') != sid or
                    d.get('allowed') != allowed):
                problems.append('decision line %r' % d)
            if (case == 'placement_down' and row['asks_placement'] and
                    d.get('cause', '-') == '-'):
                problems.append('no cause= with placement stopped: %r' % d)
        # ImageTraitsFilter, with the same strategy, decides once more
        # what the hook accepted; what the hook refused never reaches it.
        sched = self.decisions_since('scheduler', offsets['scheduler'])
        wanted_sched = int(want == expectations.ACCEPT and case != 'plain')
        if len(sched) != wanted_sched:
            problems.append('%d decision lines in the scheduler, wanted %d'
                            % (len(sched), wanted_sched))
        elif sched and (sched[0].get('strategy') != strategy or
                        sched[0].get('instance') != sid or
                        sched[0].get('allowed') != 'True'):
            problems.append('scheduler decision line %r' % sched[0])
        if shown['status'] == 'ERROR':
            dep.reset_to_active(sid)
        result = 'ok' if not problems else 'FAILED: ' + '; '.join(problems)
        self.results.append((strategy, case, want, result))
        dep.note('%-20s %-15s %-7s %s' % (strategy, case, want, result))
        return not problems

    def run_strategy(self, strategy):
        failed = []
        for case in expectations.CASES:
            if case == 'placement_down':
                self.dep.stop('placement')
            try:
                if not self.rebuild(strategy, case):
                    failed.append(case)
            finally:
                if case == 'placement_down':
                    self.dep.start_placement()
        if failed:
            raise Failure('%s: cases %s failed' % (
                strategy, ', '.join(failed)))
