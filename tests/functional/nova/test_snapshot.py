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
"""A server booted from a snapshot: what ``reject`` knows of its image.

A snapshot inherits the ``image_*`` system metadata of its server as
properties, ``base_image_ref`` (the image the server was booted from)
included, and a server booted from the snapshot keeps that ancestor in its
``image_base_image_ref`` (nova/compute/utils.py
``initialize_instance_snapshot_metadata``, nova/compute/api.py
``_populate_instance_for_create``). Its system metadata still describes the
snapshot, as booting it recorded.
"""

from nova_image_traits.conductor import hook
from tests.functional.nova import base

TRAIT = 'CUSTOM_NIT_SNAPSHOT'


class RejectFromSnapshotTest(base.ImageTraitsTestBase):
    """``reject``, with the hook, on a server booted from a snapshot."""

    def setUp(self):
        super().setUp()
        self.root, _child = self.start_nested_compute('host1')
        self.set_traits(self.root, [TRAIT])
        hook.install()
        self.addCleanup(hook.uninstall)
        self.set_image_traits_opts(strategy='reject')
        self.flavor = self.create_flavor()
        self.ancestor = self.create_image(required=[TRAIT])
        first = self.boot(self.flavor, self.ancestor)
        self.snapshot = self.api.post_server_action(
            first['id'], {'createImage': {'name': 'snap'}})['image_id']
        self.wait_until_settled(first)
        self.server = self.boot(self.flavor, self.snapshot)
        # The premise: the snapshot names its ancestor, and the server runs
        # the snapshot.
        image = self.glance.show(None, self.snapshot)
        self.assertEqual(self.ancestor,
                         image['properties']['base_image_ref'])
        self.assertEqual(self.snapshot, self.server['image']['id'])

    def test_trait_the_snapshot_required_counts_as_validated(self):
        image = self.create_image(required=[TRAIT])
        server = self.rebuild(self.server, image)
        self.assertEqual('ACTIVE', server['status'],
                         self.fault_message(server))
        self.assertEqual(image, server['image']['id'])

    def test_other_trait_is_refused(self):
        self.set_traits(self.root, [TRAIT, 'CUSTOM_NIT_OTHER'])
        image = self.create_image(required=['CUSTOM_NIT_OTHER'])
        server = self.rebuild(self.server, image)
        self.assertEqual(self.snapshot, server['image']['id'])
        self.assertNotIn('CUSTOM_NIT_OTHER', self.fault_message(server))
        self.assertIn('CUSTOM_NIT_OTHER', self.fault_reason(server))
        self.assertIn('not required when this server was created',
                      self.fault_reason(server))
