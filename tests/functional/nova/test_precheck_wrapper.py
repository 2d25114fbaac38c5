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
"""The pre-check decides inside nova's rebuild call (issue 27).

Volume-backed servers, the legacy v2 pipeline, a failure of the pre-check
itself, what one accepted rebuild costs nova, and the verification of the
running nova.
"""

import sys
import threading

import fixtures
from oslo_utils import uuidutils

from nova.compute import api as compute_api
from nova import context as nova_context
from nova.image import glance
from nova import objects
from nova.tests import fixtures as nova_fixtures
from nova.tests.functional.api import client as api_client

from nova_image_traits.api import compat
from nova_image_traits.api import nodes as nit_nodes
from nova_image_traits.api import policy as api_policy
from nova_image_traits.api import precheck
from nova_image_traits.api import rebuild_wrapper
from nova_image_traits.placement import client as placement_client
from nova_image_traits.placement import prefetch
from nova_image_traits import reasons
from nova_image_traits.strategies import held_providers
from tests.functional.nova import test_precheck
from tests.functional.nova import test_refusal

GOLD = test_precheck.GOLD
ABSENT = test_precheck.ABSENT


class VolumeBackedPrecheckTest(test_precheck._PrecheckBase):
    """A 2.93 reimage of a volume-backed server, decided in nova-api."""

    #: The root volume, and the imageRef the server is created with.
    VOLUME = nova_fixtures.CinderFixture.IMAGE_BACKED_VOL
    IMAGE_REF = None

    def setUp(self):
        super().setUp()
        self.cinder = self.useFixture(nova_fixtures.CinderFixture(self))
        self.api.microversion = '2.93'
        server = {
            'flavorRef': self.flavor, 'name': 'bfv', 'networks': 'none',
            'block_device_mapping_v2': [{
                'boot_index': 0, 'source_type': 'volume',
                'destination_type': 'volume', 'uuid': self.VOLUME}]}
        if self.IMAGE_REF:
            server['imageRef'] = self.IMAGE_REF
        self.server = self.api.post_server({'server': server})
        self.server = self.wait_until_settled(self.server)
        self.assertEqual('ACTIVE', self.server['status'])
        self.before = self._read_back()
        self.assertEqual(self.IMAGE_REF or '', self.before[0])

    def test_refused_reimage_leaves_the_server_untouched(self):
        resp = self._rebuild_refused(self.create_image(required=ABSENT))
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertIn(ABSENT[0], resp.json()['badRequest']['message'])
        self.assertEqual(self.before, self._read_back())
        self.assertEqual('ACTIVE',
                         self.api.get_server(self.server['id'])['status'])

    def _nova_goes_on(self, image):
        # CinderFixture never tells the compute that the volume was
        # reimaged: stop at the cast to the conductor, which nova-api
        # reaches only when it accepted the rebuild.
        casts = []
        self.stub_out('nova.conductor.api.ComputeTaskAPI.rebuild_instance',
                      lambda *args, **kwargs: casts.append(kwargs))
        self.api.post_server_action(
            self.server['id'], {'rebuild': {'imageRef': image}})
        self.assertEqual(1, len(casts))
        return casts[0]

    def test_accepted_reimage_goes_through(self):
        image = self.create_image(required=[GOLD])
        cast = self._nova_goes_on(image)
        self.assertEqual(test_refusal.VOLUME_IMAGE, cast['orig_image_ref'])
        self.assertRegex(self.stdlog.logger.output,
                         'outcome=accept allowed=True .*instance=%s'
                         % self.server['id'])

    def test_the_volume_image_is_the_same_image(self):
        # nova compares the new image with the root volume's, and so does
        # the pre-check: the same image that gained a requirement is judged.
        self.glance.images[test_refusal.VOLUME_IMAGE]['properties'][
            'trait:' + ABSENT[0]] = 'required'
        resp = self._rebuild_refused(test_refusal.VOLUME_IMAGE)
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertEqual(self.before, self._read_back())
        self.assertIn('judged as a new image', self.stdlog.logger.output)

    def test_the_same_volume_image_undecided_when_switched_off(self):
        self.flags(judge_same_image_rebuild=False, group='image_traits')
        self.glance.images[test_refusal.VOLUME_IMAGE]['properties'][
            'trait:' + ABSENT[0]] = 'required'
        self._nova_goes_on(test_refusal.VOLUME_IMAGE)
        self.assertNotIn('Rebuild image traits decision',
                         self.stdlog.logger.output)


class VolumeWithoutImagePrecheckTest(test_precheck._PrecheckBase):
    """A root volume with no image: nova's current image is None."""

    def setUp(self):
        super().setUp()
        self.cinder = self.useFixture(nova_fixtures.CinderFixture(self))
        self.api.microversion = '2.93'
        self.server = self.wait_until_settled(self.api.post_server(
            {'server': {
                'flavorRef': self.flavor, 'name': 'bfv', 'networks': 'none',
                'block_device_mapping_v2': [{
                    'boot_index': 0, 'source_type': 'volume',
                    'destination_type': 'volume',
                    'uuid': uuidutils.generate_uuid()}]}}))
        self.assertEqual('ACTIVE', self.server['status'])
        self.before = self._read_back()

    def test_refused_reimage_leaves_the_server_untouched(self):
        resp = self._rebuild_refused(self.create_image(required=ABSENT))
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertEqual(self.before, self._read_back())


class VolumeWithImageRefPrecheckTest(VolumeBackedPrecheckTest):
    """Created from a volume with an imageRef: image_ref is not empty."""

    IMAGE_REF = test_refusal.VOLUME_IMAGE


class LegacyV2PrecheckTest(test_precheck._PrecheckBase):
    """The legacy v2 pipeline answers as nova's own errors do there."""

    def test_refusal_without_version_headers(self):
        fixture = self.api_fixture
        legacy = api_client.TestOpenStackClient(
            'fake', fixture.base_url.replace('/v2.1', '/v2', 1),
            project_id=fixture.project_id, roles=['reader', 'member'])
        exc = self.assertRaises(
            api_client.OpenStackApiException, legacy.post_server_action,
            self.server['id'],
            {'rebuild': {'imageRef': self.create_image(required=ABSENT)}})
        resp = exc.response
        self.assertEqual(400, resp.status_code, resp.text)
        # A tenant's answer: nothing of the host (test_host_detail).
        self.assertEqual(reasons.host_lacks(),
                         resp.json()['badRequest']['message'])
        for header in ('OpenStack-API-Version',
                       'X-OpenStack-Nova-API-Version'):
            self.assertNotIn(header, resp.headers)
        self.assertNotIn('OpenStack-API-Version',
                         resp.headers.get('Vary', ''))
        self.assertEqual(self.before, self._read_back())


class PrecheckFailurePassesToNovaTest(test_precheck._PrecheckBase):
    """A failure of the pre-check itself is not the user's fault."""

    def test_internal_error_lets_the_conductor_decide(self):
        self.useFixture(fixtures.MockPatchObject(
            held_providers.HeldProvidersStrategy, 'evaluate',
            side_effect=RuntimeError('a bug')))
        image = self.create_image(required=[GOLD])
        # Accepted by nova-api: no 400 of the pre-check's.
        server = self.rebuild(self.server, image)
        self.assertIn('rebuild', self._read_back()[5])
        self.assertIn('the conductor decides', self.stdlog.logger.output)
        # The hook fails the same way, and refuses (on_placement_error).
        self.assertEqual('ERROR', server['status'])

    def test_a_refusal_that_cannot_be_worded_lets_the_conductor_decide(self):
        self.useFixture(fixtures.MockPatchObject(
            api_policy, 'refusal_reason', side_effect=RuntimeError('a bug')))
        image = self.create_image(required=ABSENT)
        # Not nova's 500: nova-api accepts, and the hook refuses.
        server = self.rebuild(self.server, image)
        self.assertIn('could not answer', self.stdlog.logger.output)
        self.assertEqual('ERROR', server['status'])


class PrecheckCostTest(test_precheck._PrecheckBase):
    """An accepted rebuild reads the image once, and saves as nova does."""

    def _count(self, image):
        counts = {'glance': 0, 'saves': []}
        real_get, real_save = glance.API.get, objects.Instance.save

        def get(api, *args, **kwargs):
            counts['glance'] += 1
            return real_get(api, *args, **kwargs)

        def save(instance, *args, **kwargs):
            counts['saves'].append(kwargs.get('expected_task_state'))
            return real_save(instance, *args, **kwargs)
        with fixtures.MockPatchObject(glance.API, 'get', get), \
                fixtures.MockPatchObject(objects.Instance, 'save', save):
            self.api.post_server_action(
                self.server['id'], {'rebuild': {'imageRef': image}})
        return counts

    def test_one_image_read_and_nova_s_saves(self):
        # nova-api alone: the cast to the conductor does nothing, so only
        # the API's reads and writes are counted.
        self.stub_out('nova.conductor.api.ComputeTaskAPI.rebuild_instance',
                      lambda *args, **kwargs: None)
        decided = []
        real_decide = rebuild_wrapper.nit_decide.decide

        def decide(*args, **kwargs):
            decided.append(real_decide(*args, **kwargs))
            return decided[-1]
        self.useFixture(fixtures.MockPatchObject(
            rebuild_wrapper.nit_decide, 'decide', decide))
        with_precheck = self._count(self.create_image(required=[GOLD]))
        self.assertEqual(1, len(decided))
        self.assertTrue(decided[0].allowed)
        self.assertEqual(1, with_precheck['glance'])
        # The same rebuild, unmarked: nova alone.
        self.useFixture(fixtures.MockPatchObject(rebuild_wrapper, 'mark'))
        self.server = self.boot(self.flavor, self.old_image)
        without = self._count(self.create_image(required=[GOLD]))
        self.assertEqual(1, len(decided))
        self.assertEqual(without, with_precheck)
        # The first write nova makes, once.
        self.assertEqual([[None]], [s for s in with_precheck['saves'] if s])


class PrecheckComputeNodeTest(test_precheck._PrecheckBase):
    """The server's compute node is read from nova's database once."""

    def _reads(self):
        """The pre-check's reads of a compute node (not nova's own)."""
        reads = []
        real = objects.ComputeNode.get_by_host_and_nodename
        mine = nit_nodes.compute_node.__code__

        def get(context, host, node):
            if sys._getframe(1).f_code is mine:
                reads.append((host, node))
            return real(context, host, node)
        self.useFixture(fixtures.MockPatchObject(
            objects.ComputeNode, 'get_by_host_and_nodename', get))
        return reads

    def test_read_once_for_accepted_rebuilds(self):
        reads = self._reads()
        for _i in range(2):
            self.server = self.rebuild(
                self.server, self.create_image(required=[GOLD]))
            self.assertEqual('ACTIVE', self.server['status'])
        self.assertEqual(1, len(reads))
        # A refusal reads the node again first, never refusing on a
        # remembered one.
        resp = self._rebuild_refused(self.create_image(required=ABSENT))
        self.assertEqual(400, resp.status_code)
        self.assertEqual(2, len(reads))

    def test_a_node_created_again_is_read_before_refusing(self):
        # A node created again under its name has a new UUID: the one
        # remembered is unknown to placement.
        self.assertEqual(400, self._rebuild_refused(
            self.create_image(required=ABSENT)).status_code)
        inst = objects.Instance.get_by_uuid(
            nova_context.get_admin_context(), self.server['id'])
        stale = uuidutils.generate_uuid()
        nit_nodes._UUIDS[(inst.host, inst.node)] = stale
        reads = self._reads()
        # Not refused on the remembered node: read again, and decided on
        # the current one.
        resp = self._rebuild_refused(self.create_image(required=ABSENT))
        self.assertEqual(400, resp.status_code)
        self.assertIn(ABSENT[0], resp.json()['badRequest']['message'])
        self.assertEqual([(inst.host, inst.node)], reads)
        self.assertIn('Compute node %s of server %s is now'
                      % (stale, self.server['id']), self.stdlog.logger.output)
        self.assertEqual(self.root, nit_nodes.remembered(inst))

    def test_an_accepted_rebuild_on_a_remembered_node_reads_nothing(self):
        self.server = self.rebuild(self.server,
                                   self.create_image(required=[GOLD]))
        reads = self._reads()
        self.server = self.rebuild(self.server,
                                   self.create_image(required=[GOLD]))
        self.assertEqual('ACTIVE', self.server['status'])
        self.assertEqual([], reads)

    def test_waiting_for_the_node_counts_in_the_decision(self):
        self.flags(decision_timeout=0.5, group='image_traits')
        release = threading.Event()
        self.addCleanup(release.set)
        real = objects.ComputeNode.get_by_host_and_nodename
        mine = nit_nodes.compute_node.__code__

        def get(context, host, node):
            if sys._getframe(1).f_code is mine:
                release.wait(30)
            return real(context, host, node)
        self.useFixture(fixtures.MockPatchObject(
            objects.ComputeNode, 'get_by_host_and_nodename', get))
        # The pre-check gives up within its timeout; nova goes on and the
        # hook refuses.
        server = self.rebuild(self.server, self.create_image(required=ABSENT))
        self.assertEqual('ERROR', server['status'])
        self.assertIn("waiting for nova's database to name the compute node",
                      self.stdlog.logger.output)


class PrecheckKnownTraitsTest(test_precheck._PrecheckBase):
    """The node's traits are asked again only when its generation moved."""

    def _sent(self):
        """The GETs the pre-check's requests sent ahead sent to placement."""
        sent = []
        real = placement_client.PlacementClient.request

        def request(client, url, *args, **kwargs):
            if threading.current_thread().name == prefetch._WORKERS.name:
                sent.append(url.split('/')[1])
            return real(client, url, *args, **kwargs)
        self.useFixture(fixtures.MockPatchObject(
            placement_client.PlacementClient, 'request', request))
        return sent

    def test_traits_asked_again_only_when_the_generation_moved(self):
        self.server = self.rebuild(self.server,
                                   self.create_image(required=[GOLD]))
        self.assertEqual('ACTIVE', self.server['status'])
        sent = self._sent()
        logged = len(self.stdlog.logger.output)
        self.server = self.rebuild(self.server,
                                   self.create_image(required=[GOLD]))
        self.assertEqual('ACTIVE', self.server['status'])
        # The allocations give the node the generation of the traits given
        # before: one request, and the traits read from the kept answer,
        # as the pre-check's decision says (the hook's asks both).
        self.assertEqual(['allocations'], sent)
        lines = [line for line in
                 self.stdlog.logger.output[logged:].splitlines()
                 if 'Rebuild image traits decision: outcome=accept' in line]
        self.assertEqual([' requests=1 known=1 ', ' requests=2 known=0 '],
                         sorted(line[line.index(' requests='):
                                     line.index('elapsed_ms')]
                                for line in lines))
        image = self._read_back()[0]
        # The operator takes the trait away: the generation moves, the
        # traits are asked again, and the pre-check refuses.
        del sent[:]
        self.set_traits(self.root, [])
        resp = self._rebuild_refused(self.create_image(required=[GOLD]))
        self.assertEqual(400, resp.status_code)
        self.assertEqual(['allocations', 'resource_providers'], sent)
        self.assertEqual(image, self._read_back()[0])


class PrecheckCompatTest(test_precheck._PrecheckBase):
    """The running nova has what the pre-check relies on."""

    def test_running_nova_verified_and_wrapped(self):
        compat.verify()
        self.assertTrue(rebuild_wrapper.installed())
        self.assertIsNot(compute_api.API.rebuild,
                         compat.original(compute_api.API))

    def test_a_write_before_the_decision_fails_verification(self):
        class API:
            def rebuild(self, context, instance, image_href,
                        admin_password, **kwargs):
                image_id, image = None, {}
                flavor = instance.get_flavor()
                is_volume_backed = False
                orig_image_ref = instance.image_ref
                request_spec = None
                instance.save()
                instance.save(expected_task_state=[None])
                return image_id, image, flavor, is_volume_backed, (
                    orig_image_ref, request_spec)
        e = self.assertRaises(compat.PrecheckInstallError, compat.verify,
                              API)
        self.assertIn('calls .save before', str(e))

    def test_unsupported_nova_runs_without_or_refuses_to_start(self):
        error = compat.PrecheckInstallError(version='99', why='changed')
        self.useFixture(fixtures.MockPatchObject(
            rebuild_wrapper, 'install', side_effect=error))
        self.assertFalse(precheck.install())
        self.assertIn('runs without the pre-check',
                      self.stdlog.logger.output)
        self.flags(precheck_on_unsupported_nova='refuse_to_start',
                   group='image_traits')
        self.assertRaises(compat.PrecheckInstallError, precheck.install)

    def test_a_check_that_fails_is_an_unsupported_nova(self):
        self.useFixture(fixtures.MockPatchObject(
            compat, '_verify_source', side_effect=TypeError('no source')))
        error = self.assertRaises(compat.PrecheckInstallError,
                                  compat.verify)
        self.assertIn('TypeError: no source', str(error))
