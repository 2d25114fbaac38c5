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
"""The command line's view of what nova derives, without nova.

With nova importable, :mod:`tests.functional.test_cli_derived` and the
simulator's tests run the same code against nova's.
"""

import fixtures

from nova_image_traits import cli
from nova_image_traits.cli import derive
from nova_image_traits import decision as nit_decision
from nova_image_traits import images
from nova_image_traits.reasons import lists
from nova_image_traits import request as nit_request
from nova_image_traits import requirements as reqs
from tests.unit import base


class _SDKImage:
    """An openstacksdk image: the properties it knows are attributes."""

    def __init__(self, attributes, properties):
        self._attributes = attributes
        self.properties = properties

    def to_dict(self, computed, headers, original_names):
        return dict(self._attributes, properties=self.properties)


class SplitTest(base.TestCase):

    def test_glance_attributes_and_properties(self):
        flat = {'id': 'x', 'name': 'n', 'status': 'active',
                'disk_format': 'raw', 'min_ram': 0, 'tags': [],
                'hw_disk_bus': 'scsi', 'trait:CUSTOM_A': 'required',
                'checksum': None, 'owner': 'p'}
        self.assertEqual(
            {'disk_format': 'raw', 'min_ram': 0,
             'properties': {'hw_disk_bus': 'scsi',
                            'trait:CUSTOM_A': 'required'}},
            derive.split(flat))

    def test_nova_image_api_has_properties_only(self):
        self.assertEqual({'properties': {'hw_tpm_version': '2.0'}},
                         derive.split({'hw_tpm_version': '2.0'}))
        self.assertEqual({'properties': {}}, derive.split(None))

    def test_sdk_image_is_read_whole(self):
        # openstacksdk moves hw_disk_bus, os_secure_boot and disk_format
        # out of .properties; nova reads them all.
        image = _SDKImage({'id': 'x', 'disk_format': 'qcow2',
                           'hw_disk_bus': 'scsi', 'hw_video_model': None,
                           'os_secure_boot': 'required'},
                          {'trait:CUSTOM_A': 'required'})
        self.assertEqual(
            {'id': 'x', 'disk_format': 'qcow2', 'hw_disk_bus': 'scsi',
             'os_secure_boot': 'required', 'trait:CUSTOM_A': 'required'},
            images.glance_flat(image))


class RequirementsCellTest(base.TestCase):

    def test_each_requirement_with_its_cause(self):
        decision = nit_decision.Decision(
            outcome='reject', allowed=False, strategy='held_providers',
            requirements=(
                reqs.Requirement('CUSTOM_GOLD'),
                reqs.Requirement('COMPUTE_SECURITY_TPM_CRB',
                                 sources=('hw_tpm_model=tpm-crb',
                                          'hw_tpm_version=2.0'),
                                 via=reqs.RESOURCE_REQUEST),
                reqs.Requirement('COMPUTE_STORAGE_BUS_SCSI', reqs.ROOT,
                                 sources=('hw_disk_bus=scsi',),
                                 via='transform_image_metadata'),
                reqs.Requirement('HW_CPU_HYPERTHREADING', forbidden=True,
                                 sources=('hw_cpu_thread_policy=isolate',),
                                 via=reqs.RESOURCE_REQUEST)),
            resources=(reqs.ResourceNeed('MEM_ENCRYPTION_CONTEXT', 1,
                                         ('hw_mem_encryption=true',)),))
        self.assertEqual(
            'CUSTOM_GOLD; '
            'hw_tpm_model=tpm-crb + hw_tpm_version=2.0 -> '
            'COMPUTE_SECURITY_TPM_CRB; '
            'hw_disk_bus=scsi -> root:COMPUTE_STORAGE_BUS_SCSI; '
            'hw_cpu_thread_policy=isolate -> !HW_CPU_HYPERTHREADING; '
            'hw_mem_encryption=true -> MEM_ENCRYPTION_CONTEXT:1',
            derive.requirements_cell(decision))

    def test_none(self):
        self.assertEqual('-', derive.requirements_cell(nit_decision.Decision(
            outcome='accept', allowed=True, strategy='reject')))


class WithoutNovaTest(base.TestCase):
    """Where nova is not importable, requests go on as they are."""

    def setUp(self):
        super().setUp()

        def blocked():
            raise ImportError("No module named 'nova'", name='nova')
        self.useFixture(fixtures.MockPatchObject(
            derive, '_boot_requirements', blocked))
        self.deriver = derive.Deriver(cli.load_conf())

    def test_says_what_was_not_judged(self):
        self.assertFalse(self.deriver.available)
        note = self.deriver.note()
        self.assertIn("nova is not importable here (ImportError: No module "
                      "named 'nova')", note)
        for what in ('vTPM', 'secure boot', 'memory encryption',
                     'bus and model prefilters', 'image type',
                     'derived=unknown'):
            self.assertIn(what, note)

    def test_request_is_unchanged(self):
        request = nit_request.RebuildRequest(
            instance_uuid='u', compute_node_uuid=None,
            image_properties={'hw_tpm_version': '2.0'})
        self.assertIs(request, self.deriver.request(request))

    def test_no_scheduler_options_registered(self):
        self.assertNotIn('scheduler', self.deriver.conf)

    def test_a_nova_that_fails_to_import_is_not_fatal(self):
        def broken():
            raise RuntimeError('nova does not fit SQLAlchemy')
        self.useFixture(fixtures.MockPatchObject(
            derive, '_boot_requirements', broken))
        deriver = derive.Deriver(cli.load_conf())
        self.assertFalse(deriver.available)
        self.assertIn('(RuntimeError: nova does not fit SQLAlchemy)',
                      deriver.note())


class ShortReasonTest(base.TestCase):

    def test_derived_refusal_names_the_property(self):
        unmet = (reqs.Requirement('COMPUTE_SECURITY_UEFI_SECURE_BOOT',
                                  sources=('os_secure_boot=required',),
                                  via=reqs.RESOURCE_REQUEST),)
        decision = nit_decision.Decision(
            outcome='reject', allowed=False, strategy='root_traits',
            cause='traits-missing', unmet=unmet,
            message=lists.requirement_reason(
                unmet, "missing on this server's compute node"))
        self.assertEqual(
            'root_traits: os_secure_boot=required needs '
            "COMPUTE_SECURITY_UEFI_SECURE_BOOT: missing on this server's "
            'compute node.', cli.short_reason(decision))

    def test_trait_properties_keep_the_rule(self):
        decision = nit_decision.Decision(
            outcome='reject', allowed=False, strategy='root_traits',
            cause='traits-missing', unmet=(reqs.Requirement('CUSTOM_GOLD'),),
            message='CUSTOM_GOLD: missing.')
        self.assertEqual('root_traits: the compute node itself must have '
                         'them', cli.short_reason(decision))
