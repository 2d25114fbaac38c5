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
"""A refused rebuild, through the conductor hook, leaves nothing behind.

Nova's API writes the new image into the server (``image_ref``), its
``image_*`` system metadata and its request spec before it casts to the
conductor; nova's handler of a refusal rolls only ``image_ref`` back (nova
bugs 1744325, 1746032). These tests read everything back after a refusal
and then move the server, which the scheduler places with the request
spec's image.
"""

import time

from nova import context as nova_context
from nova import objects

from nova_image_traits.conductor import hook
from tests.functional.nova import base

#: A trait no provider has: the refused image requires it.
ABSENT = 'CUSTOM_NOWHERE_AT_ALL'
HOST = 'host1'


class RefusedRebuildRollbackTest(base.ImageTraitsTestBase):

    def setUp(self):
        super().setUp()
        self.root, _child = self.start_nested_compute(HOST)
        hook.install()
        self.addCleanup(hook.uninstall)
        self.placement.put('/traits/%s' % ABSENT, None, version='1.6')
        self.flavor = self.create_flavor()
        self.old_image = self.create_image()
        self.new_image = self.create_image(required=[ABSENT],
                                           os_type='windows',
                                           architecture='aarch64')
        server = self.boot(self.flavor, self.old_image)
        self.before = self._read_back(server)
        self.server = self.rebuild(server, self.new_image)
        self._wait_for_rollback()

    def _wait_for_rollback(self):
        # NOTE(founders): nova sets ERROR and the fault, then the hook restores
        # the rest and logs one WARNING; a user reading within those
        # milliseconds sees the server mid-rollback, so wait for the line.
        deadline = time.monotonic() + self.POLL_TIMEOUT
        while 'refused by the image traits check' not in \
                self.stdlog.logger.output:
            if time.monotonic() > deadline:
                self.fail('the hook never finished the rollback')
            time.sleep(self.POLL_INTERVAL)

    def _read_back(self, server):
        ctxt = nova_context.get_admin_context()
        mapping = objects.InstanceMapping.get_by_instance_uuid(
            ctxt, server['id'])
        with nova_context.target_cell(ctxt, mapping.cell_mapping) as cctxt:
            inst = objects.Instance.get_by_uuid(
                cctxt, server['id'], expected_attrs=['system_metadata'])
        spec = objects.RequestSpec.get_by_instance_uuid(ctxt, server['id'])
        return {
            'image_ref': inst.image_ref,
            'inherited': (inst.os_type, inst.architecture, inst.vm_mode,
                          inst.kernel_id, inst.ramdisk_id),
            'image_sysmeta': {k: v for k, v in inst.system_metadata.items()
                              if k.startswith('image_')},
            'spec_image': spec.image.id,
            'spec_traits': list(spec.image.properties.get(
                'traits_required', [])),
        }

    def test_image_properties_and_request_spec_return(self):
        self.assertEqual('ERROR', self.server['status'])
        self.assertEqual(self.old_image, self.server['image']['id'])
        after = self._read_back(self.server)
        self.assertEqual(self.before, after)
        self.assertEqual(self.old_image, after['spec_image'])
        self.assertEqual([], after['spec_traits'])
        self.assertNotIn('image_trait:%s' % ABSENT, after['image_sysmeta'])

    def test_the_reason_reaches_the_user_whole(self):
        fault = self.fault_message(self.server)
        self.assertTrue(fault.startswith(
            'No valid host was found. %s: required by the new image, '
            'missing on the resources this server uses.' % ABSENT), fault)
        self.assertTrue(fault.endswith('.'), fault)
        # The rebuild action's conductor event records it too (2.84 shows
        # event details).
        self.api.microversion = '2.84'
        actions = self.api.get_instance_actions(self.server['id'])
        rebuild = [a for a in actions if a['action'] == 'rebuild'][0]
        detail = self.api.get_instance_action_details(
            self.server['id'], rebuild['request_id'])
        events = {e['event']: e for e in detail['events']}
        event = events['rebuild_server']
        self.assertEqual('Error', event['result'])
        self.assertEqual(fault, event['details'])

    def test_one_warning_no_traceback(self):
        logs = self.stdlog.logger.output
        self.assertNotIn('Exception during message handling', logs)
        self.assertEqual(1, logs.count('refused by the image traits check'))
        self.assertIn('(image_ref, image properties, request spec restored)',
                      logs)

    def test_a_later_move_uses_the_original_image(self):
        # The user recovers with a hard reboot; the refused image's trait is
        # on no host, so a move scheduled with it would find none.
        self._start_compute('host2')
        server = self._reboot_server(self.server, hard=True)
        self.assertEqual('ACTIVE', server['status'])
        server = self._migrate_server(server)
        self.assertEqual('host2', server['OS-EXT-SRV-ATTR:host'])
        self.assertEqual(self.old_image, server['image']['id'])

    def test_another_rebuild_recovers(self):
        good = self.create_image()
        server = self.rebuild(self.server, good)
        self.assertEqual('ACTIVE', server['status'])
        self.assertEqual(good, server['image']['id'])
