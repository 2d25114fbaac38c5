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
"""The inputs on which a refused rebuild once restored nothing.

The instance and the request spec are restored as two parts: a request
spec image that cannot be built no longer keeps the instance's system
metadata, fields and ``image_ref`` from being restored. And a
volume-backed server is told the way nova tells it, by its root block
device mapping.
"""

import fixtures

from nova.conductor import manager as conductor_manager
from nova import objects
from nova.tests import fixtures as nova_fixtures

from nova_image_traits.conductor import compat
from tests.functional.nova import test_refusal
from tests.functional.nova.test_refusal import ABSENT
from tests.functional.nova.test_refusal import read_back


class VolumeBackedReimageTest(test_refusal._RestoreCaseBase):
    """A refused 2.93 reimage of a volume-backed server."""

    def setUp(self):
        super().setUp()
        self.useFixture(nova_fixtures.CinderFixture(self))
        self.api.microversion = '2.93'

    def _boot_from_volume(self, volume_id, image_ref=None):
        server = {
            'flavorRef': self.flavor, 'name': 'bfv', 'networks': 'none',
            'block_device_mapping_v2': [{
                'boot_index': 0, 'source_type': 'volume',
                'destination_type': 'volume', 'uuid': volume_id}]}
        if image_ref:
            server['imageRef'] = image_ref
        server = self.wait_until_settled(
            self.api.post_server({'server': server}))
        self.assertEqual('ACTIVE', server['status'])
        return server

    def _refuse(self, server):
        new_image = self.create_image(required=[ABSENT], os_type='windows')
        server = self.rebuild(server, new_image)
        test_refusal.wait_for_log(
            self, 'Rebuild to image %s refused by' % new_image)
        self.assertEqual('ERROR', server['status'])
        return server

    def test_volume_without_an_image(self):
        # nova's API passes orig_image_ref=None: the root volume's image
        # metadata has no image_id.
        server = self._boot_from_volume(
            nova_fixtures.CinderFixture.IMAGE_BACKED_VOL_QUIESCE)
        before = read_back(server['id'])
        self.assertEqual('', before['image_ref'])
        self.assertIsNone(before['spec_image'])
        server = self._refuse(server)
        self.assertEqual(before, read_back(server['id']))
        logs = self.stdlog.logger.output
        self.assertIn('stays on image - (restored: empty image_ref '
                      '(volume-backed), image properties, request spec;',
                      logs)
        self.assertNotIn("Field 'id' cannot be None", logs)

    def test_volume_created_with_an_image_ref(self):
        # The server keeps the imageRef it was created with, not the root
        # volume's image that nova's handler writes back.
        server = self._boot_from_volume(
            nova_fixtures.CinderFixture.IMAGE_BACKED_VOL,
            image_ref=self.old_image)
        before = read_back(server['id'])
        self.assertEqual(self.old_image, before['image_ref'])
        self.assertNotEqual(test_refusal.VOLUME_IMAGE, self.old_image)
        server = self._refuse(server)
        self.assertEqual(before, read_back(server['id']))
        self.assertEqual(self.old_image, server['image']['id'])
        self.assertIn('(restored: image_ref, image properties, request '
                      'spec;', self.stdlog.logger.output)


class KernelRamdiskTest(test_refusal._RestoreCaseBase):
    """nova's rule: a kernel_id of 'nokernel' clears both ids."""

    def test_nokernel_clears_the_ramdisk_too(self):
        # nova never looks the ramdisk up then, so it need not exist.
        self.old_image = self.create_image(
            kernel_id='nokernel', ramdisk_id='no-such-ramdisk-image')
        server, before = self.boot_and_refuse(
            self.create_image(required=[ABSENT]))
        self.assertEqual('', before['inherited'][4])
        self.assertEqual(before, read_back(server['id']))


class ConductorRejectsPropertyTest(test_refusal._RestoreCaseBase):
    """The conductor's nova rejects a property its API's nova accepted.

    As in a rolling upgrade, where the conductors run the newer nova
    first: the current image's ``hw_disk_bus`` is a value the conductor's
    ``ImageMetaProps`` refuses, so its request spec image cannot be built.
    """

    VALUE = 'virtio'

    def setUp(self):
        super().setUp()
        real = objects.ImageMetaProps.from_dict

        def from_dict(image_props):
            if image_props.get('hw_disk_bus') == self.VALUE:
                raise ValueError('Field value %s is invalid' % self.VALUE)
            return real(image_props)

        cls = conductor_manager.ComputeTaskManager
        rebuild = cls.__dict__[compat.REBUILD]

        def rebuild_instance(*args, **kwargs):
            with fixtures.MockPatchObject(objects.ImageMetaProps,
                                          'from_dict', from_dict):
                return rebuild(*args, **kwargs)

        self.useFixture(fixtures.MockPatchObject(cls, compat.REBUILD,
                                                 rebuild_instance))

    def test_instance_restored_without_the_spec(self):
        self.old_image = self.create_image(hw_disk_bus=self.VALUE,
                                           os_type='linux')
        new_image = self.create_image(required=[ABSENT])
        server, before = self.boot_and_refuse(new_image)
        after = read_back(server['id'])
        self.assertEqual(self.VALUE,
                         after['image_sysmeta']['image_hw_disk_bus'])
        self.assertEqual(before['image_sysmeta'], after['image_sysmeta'])
        self.assertEqual(before['inherited'], after['inherited'])
        self.assertEqual(before['image_ref'], after['image_ref'])
        # What the spec could not be given is said.
        self.assertEqual(new_image, after['spec_image'])
        self.assertIn('restored: image_ref, image properties; not restored: '
                      'request spec', self.stdlog.logger.output)
