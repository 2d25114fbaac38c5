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
"""Rebuilds judged on everything a boot of the new image would ask.

Real nova (API, conductor with the hook, scheduler, a fake-driver compute)
and placement. A boot of a vTPM, secure-boot or memory-encryption image,
or one whose bus or disk format a request filter turns into a trait, asks
placement for traits and resources the image's ``trait:`` properties do
not name; nova asks none of it on rebuild.
"""

import fixtures
from nova.scheduler import request_filter
from nova.tests.functional.api import client as api_client
import os_traits

from nova_image_traits.conductor import hook
from tests.functional.nova import base

HOST = 'host1'
GOLD = 'CUSTOM_GOLD'
VTPM = {'hw_tpm_version': '2.0', 'hw_tpm_model': 'tpm-crb'}
VTPM_TRAITS = ['COMPUTE_SECURITY_TPM_2_0', 'COMPUTE_SECURITY_TPM_CRB']
SECURE_BOOT = {'hw_firmware_type': 'uefi', 'os_secure_boot': 'required',
               'hw_machine_type': 'q35'}
MEM_ENCRYPTION = {'hw_mem_encryption': 'true', 'hw_firmware_type': 'uefi',
                  'hw_machine_type': 'q35'}

if hasattr(request_filter, 'tpm_secret_security_filter'):
    # NOTE(founders): nova 34 also asks the root for the vTPM secret's
    # security (tpm_secret_security_filter); earlier series do not.
    VTPM_TRAITS.append(
        os_traits.COMPUTE_SECURITY_TPM_SECRET_SECURITY_USER)


class _DerivedBase(base.ImageTraitsTestBase):

    def setUp(self):
        super().setUp()
        self.root, self.child = self.start_nested_compute(HOST)
        self.placement.put('/traits/%s' % GOLD, None, version='1.6')
        self.flavor = self.create_flavor()
        self.server = self.boot(self.flavor, self.create_image())

    def add_traits(self, rp_uuid, traits):
        """Add ``traits`` to what the provider has."""
        have = self.placement.get(
            '/resource_providers/%s/traits' % rp_uuid, version='1.6')
        self.set_traits(rp_uuid, set(have.body['traits']) | set(traits))


class HookTest(_DerivedBase):
    """The conductor hook judges what nova derives from the image."""

    def setUp(self):
        super().setUp()
        hook.install()
        self.addCleanup(hook.uninstall)

    def refused(self, image):
        server = self.rebuild(self.server, image)
        self.assertEqual('ERROR', server['status'])
        self.assertLessEqual(
            len(self.fault_message(server).encode('utf-8')), 255)
        # The reason with the host's detail, as an admin reads it.
        message = self.fault_reason(server)
        self.assertLessEqual(len(message.encode('utf-8')), 255)
        return message

    def accepted(self, image):
        server = self.rebuild(self.server, image)
        self.assertEqual('ACTIVE', server['status'],
                         self.fault_message(server))
        self.assertEqual(image, server['image']['id'])

    def test_vtpm_refused_naming_the_property(self):
        message = self.refused(self.create_image(**VTPM))
        self.assertIn('hw_tpm_version=2.0 needs COMPUTE_SECURITY_TPM_2_0',
                      message)
        self.assertIn('missing on the resources this server uses', message)

    def test_vtpm_accepted_on_a_host_with_tpm(self):
        self.add_traits(self.root, VTPM_TRAITS)
        self.accepted(self.create_image(**VTPM))

    def test_secure_boot_refused_naming_the_property(self):
        message = self.refused(self.create_image(**SECURE_BOOT))
        self.assertIn('os_secure_boot=required needs '
                      'COMPUTE_SECURITY_UEFI_SECURE_BOOT', message)

    def test_secure_boot_accepted_on_a_host_with_it(self):
        self.add_traits(self.root, ['COMPUTE_SECURITY_UEFI_SECURE_BOOT'])
        self.accepted(self.create_image(**SECURE_BOOT))

    def test_disk_bus_judged_only_with_the_prefilter(self):
        image = self.create_image(hw_disk_bus='scsi')
        self.accepted(image)
        self.flags(image_metadata_prefilter=True, group='scheduler')
        message = self.refused(self.create_image(hw_disk_bus='scsi'))
        self.assertIn('hw_disk_bus=scsi needs COMPUTE_STORAGE_BUS_SCSI',
                      message)
        # NOTE(founders): nova's fake glance images say
        # architecture=x86_64, which the prefilter turns into HW_ARCH_X86_64;
        # the fake driver does not report it.
        self.assertIn('hw_architecture=x86_64 needs HW_ARCH_X86_64', message)
        self.add_traits(self.root, ['COMPUTE_STORAGE_BUS_SCSI',
                                    'HW_ARCH_X86_64'])
        self.accepted(self.create_image(hw_disk_bus='scsi'))

    def test_image_type_judged_only_with_its_option(self):
        image = self.create_image(name='vhdx')
        self.glance.update(None, image, {'disk_format': 'vhdx'})
        self.accepted(image)
        self.flags(query_placement_for_image_type_support=True,
                   group='scheduler')
        vhdx = self.create_image(name='vhdx-2')
        self.glance.update(None, vhdx, {'disk_format': 'vhdx'})
        message = self.refused(vhdx)
        self.assertIn('disk_format=vhdx needs COMPUTE_IMAGE_TYPE_VHDX',
                      message)

    def test_memory_encryption_needs_a_resource_the_server_lacks(self):
        # Even on a host that could encrypt: the server holds no
        # MEM_ENCRYPTION_CONTEXT, and a rebuild keeps what it holds.
        self.add_traits(self.root, ['HW_CPU_X86_AMD_SEV'])
        message = self.refused(self.create_image(**MEM_ENCRYPTION))
        self.assertIn('hw_mem_encryption=true needs MEM_ENCRYPTION_CONTEXT',
                      message)
        self.assertIn('a rebuild keeps the resources it holds', message)

    def test_switched_off_judges_trait_properties_only(self):
        self.set_image_traits_opts(judge_derived_requirements=False)
        message = self.refused(self.create_image(required=[GOLD]))
        self.assertIn(GOLD, message)
        self.accepted(self.create_image(**VTPM))
        # What the check exists to prevent: from now on nova refuses every
        # rebuild of the server (reject_vtpm_instances reads the current
        # image), so the user cannot even rebuild it back.
        exc = self.assertRaises(
            api_client.OpenStackApiException, self.api.post_server_action,
            self.server['id'], {'rebuild': {'imageRef': self.create_image()}})
        self.assertEqual(400, exc.response.status_code)
        self.assertIn('vTPM', exc.response.text)


class SwitchedOffTest(_DerivedBase):
    """``judge_derived_requirements = False``: ``trait:`` properties only.

    With every strategy: ``in_tree_candidates`` sends placement the boot's
    query less what nova derives from the image.
    """

    def setUp(self):
        super().setUp()
        hook.install()
        self.addCleanup(hook.uninstall)
        # NOTE(founders): reject refuses the image's trait, which the
        # current image did not ask: it must not be the one deciding.
        self.set_image_traits_opts(judge_derived_requirements=False,
                                   strategy='in_tree_candidates',
                                   fallback_strategy='reject')
        self.add_traits(self.root, [GOLD])

    def test_in_tree_candidates_asks_no_derived_trait(self):
        server = self.rebuild(self.server,
                              self.create_image(required=[GOLD], **VTPM))
        self.assertEqual('ACTIVE', server['status'],
                         self.fault_message(server))
        self.assertIn('strategy=in_tree_candidates fallback=-',
                      self.stdlog.logger.output)

    def test_in_tree_candidates_still_judges_trait_properties(self):
        self.set_traits(self.root, [])
        server = self.rebuild(self.server,
                              self.create_image(required=[GOLD], **VTPM))
        self.assertEqual('ERROR', server['status'])
        self.assertIn(GOLD, self.fault_reason(server))
        self.assertIn('strategy=in_tree_candidates fallback=-',
                      self.stdlog.logger.output)


class AttributionOnRefusalTest(_DerivedBase):
    """Which property asks what is found for a refusal's reason only.

    Finding it runs nova's request filters once more per image property,
    and nova's transform_image_metadata logs an ERROR on each run with
    ``hw_viommu_model`` (nova asks for ``COMPUTE_VIOMMU_<MODEL>``, which
    os-traits names ``COMPUTE_VIOMMU_MODEL_<MODEL>``).
    """

    IMAGE = dict(VTPM, hw_viommu_model='intel', hw_disk_bus='scsi',
                 hw_vif_model='virtio')
    NOVA_ERROR = "Computed trait name 'COMPUTE_VIOMMU_INTEL' is not valid"

    def setUp(self):
        super().setUp()
        hook.install()
        self.addCleanup(hook.uninstall)
        self.flags(image_metadata_prefilter=True, group='scheduler')
        self.runs = []
        real = request_filter.transform_image_metadata

        def transform_image_metadata(ctxt, spec):
            self.runs.append(spec.image.properties.get('hw_disk_bus'))
            return real(ctxt, spec)
        self.useFixture(fixtures.MockPatchObject(
            request_filter, 'ALL_REQUEST_FILTERS',
            [f if f is not real else transform_image_metadata
             for f in request_filter.ALL_REQUEST_FILTERS]))

    def rebuild_logged(self):
        """Rebuild to :data:`IMAGE`; return the server and nova's ERRORs."""
        before = self.stdlog.logger.output.count(self.NOVA_ERROR)
        server = self.rebuild(self.server, self.create_image(**self.IMAGE))
        return server, self.stdlog.logger.output.count(
            self.NOVA_ERROR) - before

    def test_an_accepted_rebuild_derives_its_image_once(self):
        self.add_traits(self.root, VTPM_TRAITS)
        server, errors = self.rebuild_logged()
        self.assertEqual('ACTIVE', server['status'],
                         self.fault_message(server))
        # Once on the image, once on an image without properties.
        self.assertEqual(['scsi', None], self.runs)
        self.assertEqual(1, errors)

    def test_a_refusal_names_the_property(self):
        server, errors = self.rebuild_logged()
        self.assertEqual('ERROR', server['status'])
        self.assertIn('hw_tpm_version=2.0 needs COMPUTE_SECURITY_TPM_2_0',
                      self.fault_reason(server))
        # Each property left out once, the image's disk bus kept but once.
        self.assertGreater(self.runs.count('scsi'), 1)
        self.assertGreater(errors, 1)


class NumberedGroupForbiddenTest(base.ImageTraitsTestBase):
    """A flavor's ``trait1:X=forbidden`` follows placement's per-group rule.

    The server holds ``CUSTOM_MAGIC`` on ``<host>-child`` for its numbered
    group; the image requires ``X`` in the unsuffixed group.
    """

    def setUp(self):
        super().setUp()
        self.root, self.child = self.start_nested_compute(HOST)
        hook.install()
        self.addCleanup(hook.uninstall)
        self.set_traits(self.root, [GOLD])

    def _server(self, extra_specs):
        flavor = self.create_flavor(extra_specs=extra_specs)
        return self.boot(flavor, self.create_image())

    def test_numbered_group_forbidden_does_not_refuse(self):
        server = self._server({'resources1:' + base.CHILD_RESOURCE: '1',
                               'trait1:' + GOLD: 'forbidden'})
        image = self.create_image(required=[GOLD])
        server = self.rebuild(server, image)
        self.assertEqual('ACTIVE', server['status'],
                         self.fault_message(server))

    def test_unsuffixed_forbidden_refuses(self):
        self.set_traits(self.root, [])
        server = self._server({'trait:' + GOLD: 'forbidden'})
        server = self.rebuild(server, self.create_image(required=[GOLD]))
        self.assertEqual('ERROR', server['status'])
        self.assertIn("forbidden by the server's flavor",
                      self.fault_message(server))


class PrecheckTest(_DerivedBase):
    """The nova-api pre-check refuses the same, before anything changes."""

    ENABLE_API_PRECHECK = True

    def setUp(self):
        super().setUp()
        hook.install()
        self.addCleanup(hook.uninstall)

    def refused(self, image):
        exc = self.assertRaises(
            api_client.OpenStackApiException, self.api.post_server_action,
            self.server['id'], {'rebuild': {'imageRef': image}})
        self.assertEqual(400, exc.response.status_code, exc.response.text)
        server = self.api.get_server(self.server['id'])
        self.assertEqual('ACTIVE', server['status'])
        self.assertNotEqual(image, server['image']['id'])
        return exc.response.json()['badRequest']['message']

    def test_vtpm_refused(self):
        message = self.refused(self.create_image(**VTPM))
        self.assertIn('hw_tpm_version=2.0 needs COMPUTE_SECURITY_TPM_2_0',
                      message)

    def test_secure_boot_refused(self):
        message = self.refused(self.create_image(**SECURE_BOOT))
        self.assertIn('os_secure_boot=required', message)

    def test_memory_encryption_refused(self):
        message = self.refused(self.create_image(**MEM_ENCRYPTION))
        self.assertIn('MEM_ENCRYPTION_CONTEXT', message)

    def test_accepted_on_a_host_that_has_them(self):
        self.add_traits(self.root, VTPM_TRAITS)
        image = self.create_image(**VTPM)
        server = self.rebuild(self.server, image)
        self.assertEqual('ACTIVE', server['status'],
                         self.fault_message(server))
        self.assertEqual(image, server['image']['id'])

    def test_disk_bus_follows_the_prefilter(self):
        image = self.create_image(hw_disk_bus='scsi')
        server = self.rebuild(self.server, image)
        self.assertEqual('ACTIVE', server['status'])
        self.flags(image_metadata_prefilter=True, group='scheduler')
        self.add_traits(self.root, ['HW_ARCH_X86_64'])
        message = self.refused(self.create_image(hw_disk_bus='usb'))
        self.assertTrue(message.startswith(
            'hw_disk_bus=usb needs COMPUTE_STORAGE_BUS_USB: missing on '),
            message)


class PrecheckImageTypeTest(_DerivedBase):
    """The image type, judged by the pre-check only with its option."""

    ENABLE_API_PRECHECK = True

    def setUp(self):
        super().setUp()
        hook.install()
        self.addCleanup(hook.uninstall)

    def _vhdx(self, name):
        image = self.create_image(name=name)
        self.glance.update(None, image, {'disk_format': 'vhdx'})
        return image

    def test_image_type_follows_its_option(self):
        server = self.rebuild(self.server, self._vhdx('vhdx-1'))
        self.assertEqual('ACTIVE', server['status'])
        self.flags(query_placement_for_image_type_support=True,
                   group='scheduler')
        exc = self.assertRaises(
            api_client.OpenStackApiException, self.api.post_server_action,
            self.server['id'], {'rebuild': {'imageRef': self._vhdx('v2')}})
        self.assertEqual(400, exc.response.status_code)
        self.assertIn('disk_format=vhdx needs COMPUTE_IMAGE_TYPE_VHDX',
                      exc.response.json()['badRequest']['message'])


class PrecheckNumberedGroupForbiddenTest(NumberedGroupForbiddenTest):
    """The same per-group rule through the nova-api pre-check."""

    ENABLE_API_PRECHECK = True

    def test_unsuffixed_forbidden_refuses(self):
        self.set_traits(self.root, [])
        server = self._server({'trait:' + GOLD: 'forbidden'})
        exc = self.assertRaises(
            api_client.OpenStackApiException, self.api.post_server_action,
            server['id'],
            {'rebuild': {'imageRef': self.create_image(required=[GOLD])}})
        self.assertEqual(400, exc.response.status_code)
        self.assertIn("forbidden by the server's flavor",
                      exc.response.json()['badRequest']['message'])


class FilterOnlyTest(_DerivedBase):
    """Without the hook, the filter judges the same on rebuild."""

    ENABLE_IMAGE_TRAITS_FILTER = True

    def test_vtpm_refused_by_the_filter(self):
        server = self.rebuild(self.server, self.create_image(**VTPM))
        self.assertEqual('ERROR', server['status'])
        self.assertIn('No valid host', self.fault_message(server))

    def test_vtpm_accepted_by_the_filter_on_a_host_with_tpm(self):
        self.add_traits(self.root, VTPM_TRAITS)
        server = self.rebuild(self.server, self.create_image(**VTPM))
        self.assertEqual('ACTIVE', server['status'],
                         self.fault_message(server))
