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
* to the second, it is refused: the server goes to ERROR, keeps its old
  image, and its fault names the missing trait.
"""

import io

from tempest.api.compute import base
from tempest.common import waiters
from tempest import config
from tempest.lib.common.utils import data_utils
from tempest.lib.common.utils import test_utils
from tempest.lib import decorators

CONF = config.CONF


class RebuildWithImageTraitsTest(base.BaseV2ComputeAdminTest):
    """Rebuild a server to images that require traits."""

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
        cls.absent = cls._trait_name('LACK')
        for trait in (cls.present, cls.absent):
            cls.placement.create_trait(trait)
            cls.addClassResourceCleanup(
                test_utils.call_and_ignore_notfound_exc,
                cls.placement.delete_trait, trait)
        current = cls.providers.list_resource_provider_traits(cls.rp)
        cls.providers.update_resource_provider_traits(
            cls.rp, traits=current['traits'] + [cls.present],
            resource_provider_generation=current[
                'resource_provider_generation'])
        cls.addClassResourceCleanup(cls._remove_trait)
        cls.image_present = cls._image(cls.present)
        cls.image_absent = cls._image(cls.absent)

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
        old_image = self._image_of()
        server = self._rebuild(self.image_absent, 'ERROR')
        self.addCleanup(self.os_admin.servers_client.reset_state,
                        self.server_id, state='active')
        self.assertEqual(old_image, server['image']['id'])
        self.assertIn(self.absent, server['fault']['message'])
