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
"""A rebuild right after a server moved is judged on its new host.

After a live migration only the source compute tells the scheduler, and
under its own name (``ComputeManager._post_live_migration``); the
destination's instances in the scheduler's host manager lack the server
until the next ``_sync_scheduler_instance_info``. Periodic tasks do not run
in nova's functional harness, so that window lasts the whole test.
"""

from tests.functional.nova import base
from tests.functional.nova import test_derived

TRAIT = 'CUSTOM_NIT_MOVED'


class RebuildAfterLiveMigrationTest(base.ImageTraitsTestBase):
    """``ImageTraitsFilter`` on the host a server was live-migrated to."""

    ENABLE_IMAGE_TRAITS_FILTER = True

    def setUp(self):
        super().setUp()
        self.source, _child = self.start_nested_compute('host1')
        self.dest, _child = self.start_nested_compute('host2')
        self.flavor = self.create_flavor()
        self.plain = self.create_image()
        # Two other servers on the destination. The first update from a host
        # the scheduler does not track yet makes it read the host's
        # instances from the database (HostManager._recreate_instance_info);
        # from the second on, it trusts what it tracks, as it does in a
        # cloud once _sync_scheduler_instance_info has run.
        for _i in range(2):
            self.boot(self.flavor, self.plain, host='host2')
        self.server = self.boot(self.flavor, self.plain, host='host1')
        # NOTE(founders): nova 31's _live_migrate helper takes no host.
        self.api.post_server_action(self.server['id'], {'os-migrateLive': {
            'host': 'host2', 'block_migration': 'auto'}})
        self._wait_for_migration_status(self.server, ['completed'])
        self.server = self._wait_for_state_change(self.server, 'ACTIVE')
        self.assertEqual('host2', self.server['OS-EXT-SRV-ATTR:host'])
        # The premise of the tests, read from the running scheduler.
        info = self.scheduler_service.manager.host_manager._instance_info[
            'host2']
        self.assertTrue(info['updated'])
        self.assertEqual(2, len(info['instances']))
        self.assertNotIn(self.server['id'], info['instances'])

    def test_accepted_where_the_trait_is(self):
        self.set_traits(self.dest, [TRAIT])
        image = self.create_image(required=[TRAIT])
        server = self.rebuild(self.server, image)
        self.assertEqual('ACTIVE', server['status'],
                         self.fault_message(server))
        self.assertEqual(image, server['image']['id'])
        self.assertEqual('host2', server['OS-EXT-SRV-ATTR:host'])
        self.assertEqual(['accept'], self._outcomes())

    def test_vtpm_refused_by_the_filter_on_the_new_host(self):
        # nova's conductor checks only trait: properties; the filter judges
        # what a boot of the image would ask, here on host2, which has no
        # TPM traits (host1 has them, and the server no longer uses it).
        self.set_traits(self.source, test_derived.VTPM_TRAITS)
        server = self.rebuild(self.server,
                              self.create_image(**test_derived.VTPM))
        self.assertIn('No valid host', self.fault_message(server))
        self.assertEqual(['reject'], self._outcomes())
        self.assertNotIn('carries the rebuild scheduler hint',
                         self.stdlog.logger.output)

    def _outcomes(self):
        """The outcomes of the decisions made for the moved server."""
        return [line.split('outcome=')[1].split()[0]
                for line in self.stdlog.logger.output.splitlines()
                if 'Rebuild image traits decision:' in line and
                'instance=%s host=host2 ' % self.server['id'] in line]
