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
"""``audit`` and ``check`` with nova's aggregate isolation on.

The commands read ``[scheduler] enable_isolated_aggregate_filtering`` from
nova.conf and nova's aggregates from the compute API: ``audit`` lists the
servers that a rebuild with their own image would now refuse, before the
deployer upgrades.
"""

import os
import tempfile

from tests.functional import test_cli_check_audit

GOLD = 'CUSTOM_NIT_GOLD'


class AuditIsolationTest(test_cli_check_audit.CLITestBase):

    def setUp(self):
        super().setUp()
        self.set_traits(self.root1, [GOLD])
        self.plain = self.create_image()
        self.gold = self.create_image(required=[GOLD])
        # Booted before the aggregate is isolated.
        self.breaking = self.boot(self.small, self.plain, host='host1')
        self.licensed = self.boot(self.small, self.gold, host='host1')
        self.elsewhere = self.boot(self.small, self.plain, host='host2')
        aggregate = self.admin_api.post_aggregate(
            {'aggregate': {'name': 'gold'}})
        self.admin_api.add_host_to_aggregate(aggregate['id'], 'host1')
        self.admin_api.post_aggregate_action(aggregate['id'], {
            'set_metadata': {'metadata': {'trait:%s' % GOLD: 'required'}}})
        with tempfile.NamedTemporaryFile('w', suffix='.conf',
                                         delete=False) as f:
            f.write('[scheduler]\nenable_isolated_aggregate_filtering = '
                    'True\n')
        self.addCleanup(os.unlink, f.name)
        self.isolating = f.name

    def outcomes(self, rows):
        return {r['Server']: (r['Outcome'], r['Reason']) for r in rows}

    def test_audit_lists_the_server_breaking_isolation(self):
        rc, rows, err = self.cli_json('audit', '--config-file',
                                      self.isolating)
        self.assertEqual(1, rc, err)
        found = self.outcomes(rows)
        self.assertEqual('reject', found[self.breaking['id']][0])
        self.assertIn('isolated-aggregate', found[self.breaking['id']][1])
        self.assertEqual('accept', found[self.licensed['id']][0])
        self.assertEqual('accept', found[self.elsewhere['id']][0])
        self.assertIn('3 servers on 2 nodes: 1 failed', err)

    def test_audit_with_isolation_off_lists_nothing(self):
        rc, rows, err = self.cli_json('audit')
        self.assertEqual(0, rc, err)
        self.assertEqual({'accept'}, {r['Outcome'] for r in rows})

    def test_check_a_plain_rebuild_of_the_licensed_server(self):
        rc, rows, err = self.cli_json('check', self.licensed['id'],
                                      '--image', self.plain,
                                      '--config-file', self.isolating)
        self.assertEqual('reject', rows[0]['Outcome'], err)
        rc, rows, err = self.cli_json('check', self.licensed['id'],
                                      '--image', self.plain)
        self.assertEqual('accept', rows[0]['Outcome'], err)
