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
"""Rebuilds to images with required traits, with tempest's own clients.

An admin puts a fresh custom trait on the resource provider of the
server's compute node (placement client), and makes two images (image
client): one requiring that trait, one requiring a trait no provider has.
The server's owner rebuilds to each (compute client):

* to the first, the rebuild succeeds (every strategy but reject,
  which accepts only traits known at boot);
* to the second, it is refused. With the nova-api pre-check
  (``[nova_image_traits] precheck``), nova-api answers 400 and nothing
  about the server changes; without it, the conductor refuses: the server
  goes to ERROR and keeps its old image.

The owner (tempest's primary credentials, not an admin) never reads the
missing trait: neither in the 400 nor in the fault's message. An admin
reads it in the 400 it gets for the same rebuild, and in the fault's
details, which nova shows to admins only
(``os_compute_api:image_traits:refusal:host_detail`` at its default).

A volume-backed server reimaged (compute API 2.93) to the second image is
refused by the conductor, with or without the pre-check, which leaves
volume-backed servers to it; it keeps its empty image (needs cinder).
"""

import io

from tempest.api.compute import base
from tempest.common import waiters
from tempest import config
from tempest.lib.common.utils import data_utils
from tempest.lib.common.utils import test_utils
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

CONF = config.CONF

#: What the owner reads instead of the host's detail.
TENANT_REASON = ("This server's host does not offer what the new image "
                 'requires.')


class _ImageTraitsBase(base.BaseV2ComputeAdminTest):
    """Clients, traits and images for the tests below."""

    # Traits in placement need 1.6.
    placement_min_microversion = '1.6'

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.nova_image_traits.enabled:
            raise cls.skipException('nova-image-traits is not enabled')

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        cls.placement = cls.os_admin.placement_client
        cls.providers = cls.os_admin.resource_providers_client
        cls.admin_images = cls.os_admin.image_client_v2

    @classmethod
    def _trait_name(cls, word):
        return ('CUSTOM_NIT_TEMPEST_%s_%s' % (
            word, data_utils.rand_uuid_hex()[:12])).upper()

    @classmethod
    def _image(cls, trait):
        image = cls.admin_images.create_image(
            name=data_utils.rand_name(prefix=CONF.resource_name_prefix,
                                      name='nit-image'),
            container_format='bare', disk_format='raw',
            visibility='public', **{'trait:%s' % trait: 'required'})
        cls.addClassResourceCleanup(
            test_utils.call_and_ignore_notfound_exc,
            cls.admin_images.delete_image, image['id'])
        cls.admin_images.store_image_file(image['id'], io.BytesIO(b'0' * 512))
        return image['id']

    @classmethod
    def _absent_trait_image(cls):
        """An image requiring a trait placement knows and nobody has."""
        cls.absent = cls._trait_name('LACK')
        cls.placement.create_trait(cls.absent)
        cls.addClassResourceCleanup(
            test_utils.call_and_ignore_notfound_exc,
            cls.placement.delete_trait, cls.absent)
        cls.image_absent = cls._image(cls.absent)

    def assert_fault_names_it_for_the_admin_only(self, server_id, trait):
        """The owner's fault names nothing; the admin's details do."""
        owner = self.servers_client.show_server(server_id)['server']
        self.assertIn(TENANT_REASON, owner['fault']['message'])
        self.assertNotIn(trait, str(owner['fault']))
        admin = self.os_admin.servers_client.show_server(
            server_id)['server']
        self.assertNotIn(trait, admin['fault']['message'])
        self.assertIn(trait, admin['fault'].get('details', ''))


class RebuildWithImageTraitsTest(_ImageTraitsBase):
    """Rebuild a server to images that require traits."""

    @classmethod
    def resource_setup(cls):
        super().resource_setup()
        server = cls.create_test_server(wait_until='ACTIVE')
        cls.server_id = server['id']
        shown = cls.os_admin.servers_client.show_server(
            cls.server_id)['server']
        node = shown['OS-EXT-SRV-ATTR:hypervisor_hostname']
        cls.rp = cls.providers.list_resource_providers(
            name=node)['resource_providers'][0]['uuid']
        cls.present = cls._trait_name('HAVE')
        cls.placement.create_trait(cls.present)
        cls.addClassResourceCleanup(
            test_utils.call_and_ignore_notfound_exc,
            cls.placement.delete_trait, cls.present)
        current = cls.providers.list_resource_provider_traits(cls.rp)
        cls.providers.update_resource_provider_traits(
            cls.rp, traits=current['traits'] + [cls.present],
            resource_provider_generation=current[
                'resource_provider_generation'])
        cls.addClassResourceCleanup(cls._remove_trait)
        cls.image_present = cls._image(cls.present)
        cls._absent_trait_image()

    @classmethod
    def _remove_trait(cls):
        current = cls.providers.list_resource_provider_traits(cls.rp)
        cls.providers.update_resource_provider_traits(
            cls.rp, traits=[t for t in current['traits']
                            if t != cls.present],
            resource_provider_generation=current[
                'resource_provider_generation'])

    def _image_of(self):
        return self.servers_client.show_server(
            self.server_id)['server']['image']['id']

    def _rebuild(self, image_id, status):
        self.servers_client.rebuild_server(self.server_id, image_id)
        return waiters.wait_for_server_status(
            self.servers_client, self.server_id, status,
            raise_on_error=False)

    @decorators.idempotent_id('6b0e4e0a-3c5f-4f0e-9a3e-6f1f1d0b8e01')
    def test_rebuild_to_image_requiring_a_trait_the_host_has(self):
        if CONF.nova_image_traits.strategy == 'reject':
            raise self.skipException("strategy 'reject' accepts only traits "
                                     "known at boot")
        server = self._rebuild(self.image_present, 'ACTIVE')
        self.assertEqual(self.image_present, server['image']['id'])

    @decorators.idempotent_id('0c5f7b7e-8d1a-4f2b-b1f5-2e8f3c9a7d02')
    def test_rebuild_to_image_requiring_a_missing_trait_is_refused(self):
        if CONF.nova_image_traits.precheck:
            raise self.skipException('the nova-api pre-check refuses first '
                                     '(see the test of the API refusal)')
        old_image = self._image_of()
        server = self._rebuild(self.image_absent, 'ERROR')
        self.addCleanup(self.os_admin.servers_client.reset_state,
                        self.server_id, state='active')
        self.assertEqual(old_image, server['image']['id'])
        self.assert_fault_names_it_for_the_admin_only(self.server_id,
                                                      self.absent)

    @decorators.idempotent_id('3d7a9c1e-5b2f-4e8a-9f6d-1c4b7e2a8f03')
    def test_rebuild_refused_by_the_api_leaves_the_server_untouched(self):
        if not CONF.nova_image_traits.precheck:
            raise self.skipException('the nova-api pre-check is not '
                                     'deployed ([nova_image_traits] '
                                     'precheck)')
        before = self.servers_client.show_server(self.server_id)['server']
        actions = self.servers_client.list_instance_actions(
            self.server_id)['instanceActions']
        error = self.assertRaises(lib_exc.BadRequest,
                                  self.servers_client.rebuild_server,
                                  self.server_id, self.image_absent)
        # The owner reads no trait of the host; an admin does.
        self.assertNotIn(self.absent, str(error))
        self.assertIn(TENANT_REASON, str(error))
        error = self.assertRaises(lib_exc.BadRequest,
                                  self.os_admin.servers_client.rebuild_server,
                                  self.server_id, self.image_absent)
        self.assertIn(self.absent, str(error))
        after = self.servers_client.show_server(self.server_id)['server']
        self.assertEqual('ACTIVE', after['status'])
        self.assertIsNone(after['OS-EXT-STS:task_state'])
        self.assertEqual(before['image'], after['image'])
        self.assertEqual(before['updated'], after['updated'])
        # Not even an action record.
        self.assertEqual(
            sorted(a['request_id'] for a in actions),
            sorted(a['request_id'] for a in
                   self.servers_client.list_instance_actions(
                       self.server_id)['instanceActions']))


class VolumeBackedReimageRefusalTest(_ImageTraitsBase):
    """A refused reimage of a volume-backed server.

    With the nova-api pre-check, nova-api refuses it with a 400 (it judges
    the root volume's image as nova's rebuild reads it); without, the
    conductor does, and the server goes to ERROR.
    """

    # Rebuilding a volume-backed server to a new image (reimage).
    min_microversion = '2.93'

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.service_available.cinder:
            raise cls.skipException('cinder is not available')

    @classmethod
    def resource_setup(cls):
        super().resource_setup()
        # NOTE: from compute API 2.37 a server names its networks; without
        # neutron, it asks for none (tempest finds no tenant network).
        kwargs = {} if CONF.service_available.neutron else {
            'networks': 'none'}
        server = cls.create_test_server(volume_backed=True,
                                        wait_until='ACTIVE', **kwargs)
        cls.server_id = server['id']
        cls._absent_trait_image()

    @decorators.idempotent_id('8e2b4c6a-1d3f-4a5b-9c7e-0f1a2b3c4d04')
    def test_refused_reimage_keeps_the_server_volume_backed(self):
        self.assertEqual('', self.servers_client.show_server(
            self.server_id)['server']['image'])
        if CONF.nova_image_traits.precheck:
            error = self.assertRaises(lib_exc.BadRequest,
                                      self.servers_client.rebuild_server,
                                      self.server_id, self.image_absent)
            self.assertNotIn(self.absent, str(error))
            self.assertIn(TENANT_REASON, str(error))
            server = self.servers_client.show_server(
                self.server_id)['server']
            self.assertEqual('ACTIVE', server['status'])
            self.assertIsNone(server['OS-EXT-STS:task_state'])
            self.assertEqual('', server['image'])
            return
        self.servers_client.rebuild_server(self.server_id, self.image_absent)
        server = waiters.wait_for_server_status(
            self.servers_client, self.server_id, 'ERROR',
            raise_on_error=False)
        self.addCleanup(self.os_admin.servers_client.reset_state,
                        self.server_id, state='active')
        self.assert_fault_names_it_for_the_admin_only(self.server_id,
                                                      self.absent)
        # Nova's handler would have set image_ref to the volume's image;
        # the conductor hook puts the empty one back.
        self.assertEqual('', server['image'])
