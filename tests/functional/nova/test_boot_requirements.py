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
"""``boot_requirements.derive`` against nova's own objects and code, and
how ``nova_request`` calls it."""

import functools
from unittest import mock

import fixtures
from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects
from nova.scheduler import request_filter
from nova.scheduler import utils as scheduler_utils
from oslo_config import fixture as config_fixture
import testtools

import nova.conf
from nova_image_traits import boot_requirements
from nova_image_traits import decision
from nova_image_traits import nova_request
from nova_image_traits import reasons
from nova_image_traits import requirements as reqs

objects.register_all()

VTPM = {'hw_tpm_version': '2.0', 'hw_tpm_model': 'tpm-crb'}
UEFI = {'hw_firmware_type': 'uefi', 'hw_machine_type': 'q35'}


def _spec(properties=None, extra_specs=None, disk_format='qcow2'):
    flavor = objects.Flavor(name='f', flavorid='f', vcpus=2, memory_mb=2048,
                            root_gb=20, ephemeral_gb=0, swap=0,
                            extra_specs=dict(extra_specs or {}))
    image = objects.ImageMeta.from_dict({
        'id': 'c0ffee00-0000-4000-8000-000000000001',
        'disk_format': disk_format, 'container_format': 'bare',
        'properties': dict(properties or {})})
    spec = objects.RequestSpec(
        flavor=flavor, image=image, is_bfv=False, num_instances=1,
        instance_uuid='c0ffee00-0000-4000-8000-000000000002')
    return spec, image


class DeriveTest(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.conf = self.useFixture(config_fixture.Config(nova.conf.CONF))
        self.context = nova_context.get_admin_context()

    def derive(self, properties=None, extra_specs=None, bfv=False, **kw):
        spec, image = _spec(properties, extra_specs)
        return boot_requirements.derive(self.context, spec, image, bfv,
                                        **kw)

    def logged(self, boot):
        return [r.logged() for r in boot.derived.traits]

    def test_an_image_without_properties_asks_nothing(self):
        boot = self.derive()
        self.assertFalse(boot.derived)
        self.assertEqual(
            sorted(boot_requirements.IMAGE_FILTERS & {
                getattr(f, '__name__', '')
                for f in request_filter.ALL_REQUEST_FILTERS}),
            sorted(boot.derived.filters))

    def test_vtpm_with_sources_and_stripped_from_the_query(self):
        boot = self.derive(VTPM)
        by_trait = {r.trait: r for r in boot.derived.traits}
        tpm = by_trait['COMPUTE_SECURITY_TPM_2_0']
        self.assertEqual((reqs.UNSUFFIXED, False), (tpm.scope, tpm.forbidden))
        self.assertEqual(('hw_tpm_version=2.0',), tpm.sources)
        self.assertEqual(reqs.RESOURCE_REQUEST, tpm.via)
        self.assertEqual(('hw_tpm_model=tpm-crb', 'hw_tpm_version=2.0'),
                         by_trait['COMPUTE_SECURITY_TPM_CRB'].sources)
        self.assertEqual(frozenset(), boot.query.unsuffixed.required)
        self.assertEqual(frozenset(), boot.query.root_required)

    def test_the_flavors_own_requests_are_not_the_images(self):
        # NOTE(founders): hw:mem_encryption makes nova refuse an image
        # without UEFI firmware, so an image without properties cannot be
        # the baseline; the flavor's trait and SEV are still the flavor's.
        boot = self.derive(UEFI, {'hw:mem_encryption': 'true',
                                  'trait:CUSTOM_F': 'required'})
        self.assertFalse(boot.derived, self.logged(boot))
        self.assertEqual((), boot.derived.resources)
        self.assertIn('CUSTOM_F', boot.query.unsuffixed.required)
        self.assertIn('MEM_ENCRYPTION_CONTEXT',
                      boot.query.unsuffixed.resources)

    def test_flavor_vtpm_is_the_flavors(self):
        self.assertFalse(self.derive({}, {'hw:tpm_version': '2.0'}).derived)

    def test_memory_encryption_blames_its_property_only(self):
        boot = self.derive(dict(UEFI, hw_mem_encryption='true'))
        need, = boot.derived.resources
        self.assertEqual(('MEM_ENCRYPTION_CONTEXT', 1,
                          ('hw_mem_encryption=true',)),
                         (need.resource_class, need.amount, need.sources))

    def test_thread_policy_forbids_hyperthreading(self):
        boot = self.derive({'hw_cpu_thread_policy': 'isolate'},
                           {'hw:cpu_policy': 'dedicated'})
        self.assertEqual(
            ['!HW_CPU_HYPERTHREADING<hw_cpu_thread_policy=isolate|'
             'ResourceRequest>'], self.logged(boot))
        self.assertEqual((), boot.derived.resources)

    def test_prefilter_follows_nova_options(self):
        props = {'hw_disk_bus': 'scsi'}
        self.assertFalse(self.derive(props).derived)
        self.conf.config(image_metadata_prefilter=True, group='scheduler')
        self.conf.config(query_placement_for_image_type_support=True,
                         group='scheduler')
        self.assertEqual(
            ['root:COMPUTE_IMAGE_TYPE_QCOW2<disk_format=qcow2|'
             'require_image_type_support>',
             'root:COMPUTE_STORAGE_BUS_SCSI<hw_disk_bus=scsi|'
             'transform_image_metadata>'], self.logged(self.derive(props)))
        # A volume-backed server's disk format does not matter to nova.
        self.assertEqual(
            ['root:COMPUTE_STORAGE_BUS_SCSI<hw_disk_bus=scsi|'
             'transform_image_metadata>'],
            self.logged(self.derive(props, bfv=True)))

    def test_switched_off_asks_trait_properties_only(self):
        self.conf.config(image_metadata_prefilter=True, group='scheduler')
        boot = self.derive(dict(VTPM, hw_disk_bus='scsi'), judge=False,
                           extra_specs={'trait:CUSTOM_F': 'required'})
        self.assertIsNone(boot.derived)
        # Neither a request filter's nor ResourceRequest's traits of the
        # image are in the query in_tree_candidates sends; the flavor's are.
        self.assertEqual(frozenset(), boot.query.root_required)
        self.assertEqual(frozenset(['CUSTOM_F']),
                         boot.query.unsuffixed.required)

    def test_switched_off_keeps_the_resources_a_boot_asks(self):
        # A rebuild keeps the server's allocations: the query asks what
        # they hold, so that the strategy can find them.
        boot = self.derive(dict(UEFI, hw_mem_encryption='true'),
                           judge=False)
        self.assertEqual(1, boot.query.unsuffixed.resources.get(
            'MEM_ENCRYPTION_CONTEXT'))

    def test_the_callers_objects_are_left_alone(self):
        spec, image = _spec(dict(VTPM, **{'trait:CUSTOM_X': 'required'}))
        self.conf.config(image_metadata_prefilter=True, group='scheduler')
        boot_requirements.derive(self.context, spec, image, True)
        self.assertEqual(['CUSTOM_X'], image.properties.traits_required)
        self.assertIs(image, spec.image)
        self.assertFalse(spec.is_bfv)
        self.assertEqual(set(), spec.root_required)

    def test_a_request_filter_refusal_is_the_boots(self):
        def tpm_secret_security_filter(ctxt, spec):
            raise nova_exception.RequestFilterFailed(reason='not here')
        self.useFixture(fixtures.MockPatchObject(
            request_filter, 'ALL_REQUEST_FILTERS',
            [tpm_secret_security_filter]))
        boot = self.derive(VTPM)
        self.assertEqual('not here', boot.derived.refusal)

    def test_an_unknown_request_filter_is_named_once_and_not_run(self):
        ran = []

        def a_future_filter(ctxt, spec):
            ran.append(spec)
        self.useFixture(fixtures.MockPatchObject(
            request_filter, 'ALL_REQUEST_FILTERS', [a_future_filter]))
        log = self.useFixture(fixtures.FakeLogger(
            name=boot_requirements.__name__))
        self.derive(VTPM)
        self.derive(VTPM)
        self.assertEqual([], ran)
        self.assertEqual(1, log.output.count('a_future_filter'))

    def test_nova_failing_judges_the_flavor_alone(self):
        self.useFixture(fixtures.MockPatchObject(
            scheduler_utils.ResourceRequest, 'from_request_spec',
            side_effect=ValueError('boom')))
        log = self.useFixture(fixtures.FakeLogger(
            name=boot_requirements.__name__))
        boot = self.derive(VTPM)
        self.assertIsNone(boot.query)
        self.assertIsNone(boot.derived)
        self.assertIn('not what nova derives from the image', log.output)

    def test_a_filter_failing_on_a_variant_adds_nothing(self):
        calls = []
        real = request_filter.transform_image_metadata

        def transform_image_metadata(ctxt, spec):
            calls.append(spec.image)
            if 'hw_vif_model' not in spec.image.properties:
                raise RuntimeError('only on a made-up image')
            return real(ctxt, spec)
        self.conf.config(image_metadata_prefilter=True, group='scheduler')
        with mock.patch.object(request_filter, 'ALL_REQUEST_FILTERS',
                               [transform_image_metadata]):
            boot = self.derive({'hw_vif_model': 'virtio'})
        self.assertEqual(
            ['root:COMPUTE_NET_VIF_MODEL_VIRTIO<hw_vif_model=virtio|'
             'transform_image_metadata>'], self.logged(boot))
        self.assertGreater(len(calls), 1)


class AttributionWhenReadTest(testtools.TestCase):
    """Which property a requirement comes from is found only when read.

    Finding it runs nova's request filters once more per image property;
    an accepted rebuild reads no source, and runs them on its image once.
    """

    PROPS = dict(VTPM, hw_disk_bus='scsi', hw_vif_model='virtio',
                 hw_video_model='virtio', hw_cdrom_bus='sata')

    def setUp(self):
        super().setUp()
        self.conf = self.useFixture(config_fixture.Config(nova.conf.CONF))
        self.conf.config(image_metadata_prefilter=True, group='scheduler')
        self.runs = []

        def counted(func):
            @functools.wraps(func)
            def run(ctxt, spec):
                self.runs.append(dict(spec.image.properties.to_dict()))
                return func(ctxt, spec)
            return run
        self.useFixture(fixtures.MockPatchObject(
            request_filter, 'ALL_REQUEST_FILTERS',
            [counted(request_filter.transform_image_metadata)]))
        spec, self.image = _spec(self.PROPS)
        self.boot = boot_requirements.derive(
            nova_context.get_admin_context(), spec, self.image, False)

    def with_the_image(self):
        """The runs on the whole image (not on a variant of it)."""
        return [r for r in self.runs if 'hw_disk_bus' in r and
                'hw_vif_model' in r and 'hw_tpm_version' in r]

    def decision(self, allowed):
        return decision.Decision(
            outcome='accept' if allowed else 'reject', allowed=allowed,
            strategy='held_providers',
            requirements=self.boot.derived.traits)

    def test_an_accepted_decision_runs_the_filters_on_its_image_once(self):
        line = reasons.log_values(self.decision(True))['requirements']
        # The image, and an image without properties (the flavor's own).
        self.assertEqual(2, len(self.runs))
        self.assertEqual(1, len(self.with_the_image()))
        self.assertIn('root:COMPUTE_STORAGE_BUS_SCSI<-|'
                      'transform_image_metadata>', line)
        self.assertIn('COMPUTE_SECURITY_TPM_2_0<-|ResourceRequest>', line)

    def test_a_refusal_finds_the_sources_once(self):
        line = reasons.log_values(self.decision(False))['requirements']
        self.assertIn('root:COMPUTE_STORAGE_BUS_SCSI<hw_disk_bus=scsi|'
                      'transform_image_metadata>', line)
        # The image, an image without properties, and each property left
        # out once: the four hw_ properties, the architecture nova's image
        # object reads, and the disk format.
        ran = len(self.runs)
        self.assertEqual(2 + len(self.PROPS) + 1, ran)
        by_trait = {r.trait: r for r in self.boot.derived.traits}
        self.assertEqual(('hw_vif_model=virtio',),
                         by_trait['COMPUTE_NET_VIF_MODEL_VIRTIO'].sources)
        self.assertEqual(ran, len(self.runs))


class CurrentImageTest(testtools.TestCase):
    """``derive(current=...)`` reads the current image only when needed."""

    def setUp(self):
        super().setUp()
        self.conf = self.useFixture(config_fixture.Config(nova.conf.CONF))
        self.context = nova_context.get_admin_context()
        self.current = mock.Mock(return_value=_spec(VTPM)[1])

    def derive(self, properties, **kw):
        spec, image = _spec(properties)
        return boot_requirements.derive(self.context, spec, image, False,
                                        current=self.current, **kw)

    def test_not_called_when_nothing_is_derived(self):
        boot = self.derive({'trait:CUSTOM_X': 'required'})
        self.assertFalse(boot.derived)
        self.current.assert_not_called()
        self.assertIsNone(boot.original)

    def test_not_called_when_derived_requirements_are_not_judged(self):
        boot = self.derive(VTPM, judge=False)
        self.assertIsNone(boot.derived)
        self.current.assert_not_called()
        self.assertIsNone(boot.original)

    def test_called_once_when_the_new_image_derives_anything(self):
        boot = self.derive(VTPM)
        self.assertTrue(boot.derived)
        self.current.assert_called_once_with()
        self.assertIn('COMPUTE_SECURITY_TPM_2_0',
                      {r.trait for r in boot.original})

    def test_called_once_for_a_request_filter_refusal(self):
        def tpm_secret_security_filter(ctxt, spec):
            raise nova_exception.RequestFilterFailed(reason='not here')
        self.useFixture(fixtures.MockPatchObject(
            request_filter, 'ALL_REQUEST_FILTERS',
            [tpm_secret_security_filter]))
        self.derive(VTPM)
        self.current.assert_called_once_with()

    def test_an_unknown_current_image_is_no_original(self):
        self.current.return_value = None
        boot = self.derive(VTPM)
        self.current.assert_called_once_with()
        self.assertIsNone(boot.original)


class RebuildRequestOrderTest(testtools.TestCase):
    """The system metadata is checked once, after the new image is derived.

    The check may ask Glance and logs at INFO; it ran after the derivation
    before the split, and still does.
    """

    def setUp(self):
        super().setUp()
        self.conf = self.useFixture(config_fixture.Config(nova.conf.CONF))
        self.context = nova_context.get_admin_context()
        self.calls = []
        derive = boot_requirements.derive
        trust = nova_request.trusted_system_metadata

        def derived(*args, **kw):
            self.calls.append('derive')
            return derive(*args, **kw)

        def trusted(*args, **kw):
            self.calls.append('trust')
            return trust(*args, **kw)
        self.useFixture(fixtures.MockPatchObject(
            boot_requirements, 'derive', side_effect=derived))
        self.useFixture(fixtures.MockPatchObject(
            nova_request, 'trusted_system_metadata', side_effect=trusted))

    def request(self, strategy, properties):
        nova_request.judges_derived(self.conf.conf)
        self.conf.config(strategy=strategy, group='image_traits')
        spec, image = _spec(properties)
        return nova_request.rebuild_request(
            self.context, spec, image, None, 'host1',
            orig_sys_metadata={'image_base_image_ref': 'current'},
            orig_image_ref='current', conf=self.conf.conf)

    def test_after_the_derivation(self):
        for strategy, properties in (('root_traits', VTPM),
                                     ('reject', {}), ('reject', VTPM)):
            del self.calls[:]
            self.request(strategy, properties)
            # reject derives the current image too, after checking it.
            self.assertEqual(['derive', 'trust'], self.calls[:2], strategy)
            self.assertEqual(1, self.calls.count('trust'), strategy)
