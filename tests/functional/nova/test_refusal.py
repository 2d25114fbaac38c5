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
bugs 1744325, 1746032), and sets the empty ``image_ref`` of a
volume-backed server to the image of its root volume. These tests read
everything back after a refusal, whoever refused (the hook's check, nova's
``ImagePropertiesFilter``, ``ImageTraitsFilter``), and then move the
server, which the scheduler places with the request spec's image.
"""

import time

import fixtures

from nova.conductor import manager as conductor_manager
from nova import context as nova_context
from nova import objects
from nova.tests import fixtures as nova_fixtures

from nova_image_traits.conductor import compat
from nova_image_traits.conductor import hook
from nova_image_traits.conductor import refusal
from tests.functional.nova import base

#: A trait no provider has: the refused image requires it.
ABSENT = 'CUSTOM_NOWHERE_AT_ALL'
HOST = 'host1'
#: The image of CinderFixture's IMAGE_BACKED_VOL.
VOLUME_IMAGE = '155d900f-4e14-4e4c-a73d-069cbf4541e6'


def read_back(server_id):
    """What of a server's image nova holds, from its cell and the API DB."""
    ctxt = nova_context.get_admin_context()
    mapping = objects.InstanceMapping.get_by_instance_uuid(ctxt, server_id)
    with nova_context.target_cell(ctxt, mapping.cell_mapping) as cctxt:
        inst = objects.Instance.get_by_uuid(
            cctxt, server_id, expected_attrs=['system_metadata'])
    spec = objects.RequestSpec.get_by_instance_uuid(ctxt, server_id)
    return {
        'image_ref': inst.image_ref,
        'inherited': (inst.os_type, inst.architecture, inst.vm_mode,
                      inst.kernel_id, inst.ramdisk_id),
        'image_sysmeta': {k: v for k, v in inst.system_metadata.items()
                          if k.startswith('image_')},
        'spec_image': spec.image.id if 'id' in spec.image else None,
        'spec_props': spec.image.properties.obj_to_primitive(),
    }


def wait_for_log(test, text):
    # NOTE(founders): nova sets ERROR and the fault, then the hook logs one
    # WARNING; wait for the line before reading the logs.
    deadline = time.monotonic() + test.POLL_TIMEOUT
    while text not in test.stdlog.logger.output:
        if time.monotonic() > deadline:
            test.fail('never logged: %s' % text)
        time.sleep(test.POLL_INTERVAL)


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

    def test_the_reason_reaches_the_admin_whole(self):
        # The message everyone reads names nothing of the host; the fault's
        # details, which nova shows to admins only, do.
        fault = self.fault_message(self.server)
        self.assertNotIn(ABSENT, fault)
        reason = self.fault_reason(self.server)
        self.assertTrue(reason.startswith(
            'No valid host was found. %s: required by the new image, '
            'missing on the resources this server uses.' % ABSENT), reason)
        self.assertTrue(reason.endswith('.'), reason)
        # The rebuild action's conductor event records the message (2.84
        # shows event details).
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
        self.assertIn('(restored: image_ref, image properties, request spec; '
                      "the rebuild request's own changes, such as its key "
                      'pair, name, metadata or auto_disk_config, are kept)',
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


class _RestoreCaseBase(base.ImageTraitsTestBase):
    """Boot from a plain image, then rebuild to a refused one."""

    def setUp(self):
        super().setUp()
        self.root, self.child = self.start_nested_compute(HOST)
        hook.install()
        self.addCleanup(hook.uninstall)
        self.placement.put('/traits/%s' % ABSENT, None, version='1.6')
        self.flavor = self.create_flavor()
        self.old_image = self.create_image()

    def boot_and_refuse(self, new_image):
        server = self.boot(self.flavor, self.old_image)
        before = read_back(server['id'])
        server = self.rebuild(server, new_image)
        wait_for_log(self, 'Rebuild to image %s refused by' % new_image)
        self.assertEqual('ERROR', server['status'])
        return server, before


class SchedulerRefusalRestoredTest(_RestoreCaseBase):
    """A filter refuses, not the hook's check: the hook still restores."""

    def test_nova_image_properties_filter(self):
        # The fake driver supports x86_64 only; nova's ImagePropertiesFilter
        # runs on rebuild and refuses. The image requires no trait, so the
        # hook's check does not even look at it.
        new_image = self.create_image(hw_architecture='aarch64')
        server, before = self.boot_and_refuse(new_image)
        self.assertIn('No valid host', self.fault_message(server))
        self.assertEqual(before, read_back(server['id']))
        logs = self.stdlog.logger.output
        self.assertIn('refused by NoValidHost: No valid host was found.',
                      logs)
        self.assertIn('restored: image_ref, image properties, request spec',
                      logs)
        # The server can move again: with the refused image in its request
        # spec, ImagePropertiesFilter would refuse every host.
        self._start_compute('host2')
        server = self._reboot_server(server, hard=True)
        server = self._migrate_server(server)
        self.assertEqual('host2', server['OS-EXT-SRV-ATTR:host'])


class ImageTraitsFilterRefusalRestoredTest(_RestoreCaseBase):
    """ImageTraitsFilter refuses alone; the conductor's check let it pass."""

    ENABLE_IMAGE_TRAITS_FILTER = True

    def setUp(self):
        super().setUp()
        # NOTE(nova-image-traits): the conductor's check passes here as it
        # would in a conductor configured with another strategy: nova's own
        # check sees the trait on the child the server is allocated on,
        # while the scheduler's held_providers refuses it (the child serves
        # only numbered group 1). Only the check is nova's again; the hook's
        # wrappers of rebuild_instance and _set_vm_state_and_notify stay.
        cls = conductor_manager.ComputeTaskManager
        self.useFixture(fixtures.MockPatchObject(
            cls, compat.VALIDATE, compat.original(cls, compat.VALIDATE)))
        self.flavor = self.create_flavor(
            extra_specs={'resources1:%s' % base.CHILD_RESOURCE: '1'})
        self.set_traits(self.child, ['CUSTOM_ON_THE_CHILD'])

    def test_filter_refusal_leaves_nothing(self):
        new_image = self.create_image(required=['CUSTOM_ON_THE_CHILD'])
        server, before = self.boot_and_refuse(new_image)
        self.assertIn('ImageTraitsFilter', self.stdlog.logger.output)
        self.assertEqual(before, read_back(server['id']))
        self.assertIn('restored: image_ref, image properties, request spec',
                      self.stdlog.logger.output)


class VolumeBackedRefusalTest(_RestoreCaseBase):
    """A refused reimage of a volume-backed server (2.93) keeps its mark."""

    def setUp(self):
        super().setUp()
        self.cinder = self.useFixture(nova_fixtures.CinderFixture(self))
        self.api.microversion = '2.93'

    def _boot_from_volume(self):
        server = self.api.post_server({'server': {
            'flavorRef': self.flavor, 'name': 'bfv', 'networks': 'none',
            'block_device_mapping_v2': [{
                'boot_index': 0, 'source_type': 'volume',
                'destination_type': 'volume',
                'uuid': nova_fixtures.CinderFixture.IMAGE_BACKED_VOL}]}})
        server = self.wait_until_settled(server)
        self.assertEqual('ACTIVE', server['status'])
        return server

    def test_empty_image_ref_and_the_rest_restored(self):
        server = self._boot_from_volume()
        before = read_back(server['id'])
        self.assertEqual('', before['image_ref'])
        new_image = self.create_image(required=[ABSENT])
        server = self.rebuild(server, new_image)
        wait_for_log(self, 'Rebuild to image %s refused by' % new_image)
        self.assertEqual('ERROR', server['status'])
        # The API shows no image for a volume-backed server.
        self.assertEqual('', server['image'])
        after = read_back(server['id'])
        # At boot nova leaves the request spec's image without an id; the
        # restored one names the root volume's image, as an accepted
        # reimage leaves it.
        self.assertIsNone(before.pop('spec_image'))
        self.assertEqual(VOLUME_IMAGE, after.pop('spec_image'))
        self.assertEqual(before, after)
        self.assertIn('restored: empty image_ref (volume-backed), image '
                      'properties, request spec', self.stdlog.logger.output)
        # And it still is one: a hard reboot brings it back.
        server = self._reboot_server(server, hard=True)
        self.assertEqual('ACTIVE', server['status'])
        self.assertEqual('', server['image'])

    def test_spec_keeps_the_image_its_volume_was_created_from(self):
        # Booted with a root volume created from an image, nova's API names
        # that image in the request spec (get_bdm_image_metadata); the
        # restored spec names it again.
        server = self.api.post_server({'server': {
            'flavorRef': self.flavor, 'name': 'bfv-image',
            'networks': 'none',
            'block_device_mapping_v2': [{
                'boot_index': 0, 'source_type': 'image',
                'destination_type': 'volume', 'volume_size': 1,
                'uuid': self.old_image}]}})
        server = self.wait_until_settled(server)
        self.assertEqual('ACTIVE', server['status'])
        before = read_back(server['id'])
        self.assertEqual('', before['image_ref'])
        self.assertEqual(self.old_image, before['spec_image'])
        new_image = self.create_image(required=[ABSENT])
        server = self.rebuild(server, new_image)
        wait_for_log(self, 'Rebuild to image %s refused by' % new_image)
        self.assertEqual('ERROR', server['status'])
        self.assertEqual(before, read_back(server['id']))


class PartialRestoreTest(_RestoreCaseBase):
    """What could not be restored is reported, part by part."""

    def _patch_objects(self, **replacements):
        class Objects:
            def __getattr__(self, name):
                return replacements.get(name) or getattr(objects, name)
        self.useFixture(fixtures.MockPatchObject(refusal, 'objects',
                                                 Objects()))

    def test_request_spec_not_saved(self):
        real = objects.RequestSpec.get_by_instance_uuid

        class RequestSpec:
            @staticmethod
            def get_by_instance_uuid(context, uuid):
                spec = real(context, uuid)

                def save():
                    raise RuntimeError('database gone')
                spec.save = save
                return spec

        self._patch_objects(RequestSpec=RequestSpec)
        new_image = self.create_image(required=[ABSENT])
        server, before = self.boot_and_refuse(new_image)
        after = read_back(server['id'])
        self.assertEqual(before['image_sysmeta'], after['image_sysmeta'])
        self.assertEqual(new_image, after['spec_image'])
        logs = self.stdlog.logger.output
        self.assertIn('but its request spec could not be', logs)
        self.assertIn('restored: image_ref, image properties; not restored: '
                      'request spec', logs)

    def test_instance_not_saved_spec_still_restored(self):
        real_save = objects.Instance.save

        def save(inst, *args, **kwargs):
            if kwargs.get('expected_task_state') == ['rebuilding']:
                raise RuntimeError('database gone')
            return real_save(inst, *args, **kwargs)

        new_image = self.create_image(required=[ABSENT])
        server = self.boot(self.flavor, self.old_image)
        before = read_back(server['id'])
        self.useFixture(fixtures.MockPatchObject(objects.Instance, 'save',
                                                 save))
        self.rebuild(server, new_image)
        wait_for_log(self, 'Rebuild to image %s refused by' % new_image)
        after = read_back(server['id'])
        self.assertNotEqual(before['image_sysmeta'], after['image_sysmeta'])
        self.assertEqual(self.old_image, after['spec_image'])
        self.assertEqual(before['spec_props'], after['spec_props'])
        logs = self.stdlog.logger.output
        self.assertIn('but its image properties could not be returned', logs)
        self.assertIn('restored: image_ref, request spec; not restored: '
                      'image properties', logs)
