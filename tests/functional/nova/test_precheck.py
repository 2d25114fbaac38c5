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
"""The nova-api pre-check: a refused rebuild fails before anything changes.

nova-api runs with ``image_traits_precheck`` after ``keystonecontext`` in
its api-paste.ini pipelines, as the install guide says; the conductor runs
with the hook, which stays the authoritative check.
"""

from oslo_utils import uuidutils

from nova import context as nova_context
from nova import objects
from nova.tests.functional.api import client as api_client

from nova_image_traits.conductor import hook
from tests.functional.nova import base
from tests.functional.nova import test_derived

GOLD = 'CUSTOM_GOLD'
#: Five realistic names the host lacks: all must reach the user.
ABSENT = ['CUSTOM_ABSENT_%d' % i for i in range(5)]
#: Twelve long ones: too many for nova's column, so some are counted.
LONG = ['CUSTOM_A_RATHER_LONG_TRAIT_NAME_%02d' % i for i in range(12)]
HOST = 'host1'


class _PrecheckBase(base.ImageTraitsTestBase):

    ENABLE_API_PRECHECK = True

    def setUp(self):
        super().setUp()
        self.root, _child = self.start_nested_compute(HOST)
        hook.install()
        self.addCleanup(hook.uninstall)
        for trait in [GOLD] + ABSENT + LONG:
            self.placement.put('/traits/%s' % trait, None, version='1.6')
        self.set_traits(self.root, [GOLD])
        self.flavor = self.create_flavor()
        self.old_image = self.create_image()
        self.server = self.boot(self.flavor, self.old_image)
        self.before = self._read_back()

    def _read_back(self):
        ctxt = nova_context.get_admin_context()
        mapping = objects.InstanceMapping.get_by_instance_uuid(
            ctxt, self.server['id'])
        with nova_context.target_cell(ctxt, mapping.cell_mapping) as cctxt:
            inst = objects.Instance.get_by_uuid(
                cctxt, self.server['id'],
                expected_attrs=['system_metadata'])
        spec = objects.RequestSpec.get_by_instance_uuid(ctxt,
                                                        self.server['id'])
        actions = self.api.get_instance_actions(self.server['id'])
        # A volume-backed server's spec image has no id.
        spec_image = (spec.image.id if 'id' in spec.image else None)
        return (inst.image_ref, inst.vm_state, inst.task_state,
                dict(inst.system_metadata), spec_image,
                sorted(a['action'] for a in actions))

    def _rebuild_refused(self, image, api=None):
        api = api or self.api
        exc = self.assertRaises(
            api_client.OpenStackApiException, api.post_server_action,
            self.server['id'], {'rebuild': {'imageRef': image}})
        return exc.response


class APIPrecheckTest(_PrecheckBase):

    def test_refused_synchronously_and_untouched(self):
        image = self.create_image(required=ABSENT)
        resp = self._rebuild_refused(image)
        self.assertEqual(400, resp.status_code)
        body = resp.json()
        message = body['badRequest']['message']
        self.assertEqual(400, body['badRequest']['code'])
        # Every missing trait, first, within nova's column.
        for trait in ABSENT:
            self.assertIn(trait, message)
        self.assertLessEqual(len(message.encode('utf-8')), 200)
        self.assertNotIn(self.root, message)
        self.assertNotIn('held_providers', message)
        # Nothing about the server changed, not even an action record.
        self.assertEqual(self.before, self._read_back())
        self.assertEqual('ACTIVE',
                         self.api.get_server(self.server['id'])['status'])

    def test_too_many_long_traits_are_counted(self):
        resp = self._rebuild_refused(self.create_image(required=LONG))
        message = resp.json()['badRequest']['message']
        self.assertTrue(message.startswith(LONG[0] + ', '), message)
        self.assertRegex(message, r' and \d+ more: required by the new ')
        self.assertLessEqual(len(message.encode('utf-8')), 200)

    def test_only_the_admin_reads_the_host_detail(self):
        image = self.create_image(required=[ABSENT[0]])
        reasons = []
        # NOTE(founders): this harness's self.api is an admin too.
        self.assertNotIn('admin', self.api_fixture.api.roles)
        for api in (self.api_fixture.api, self.admin_api):
            resp = self._rebuild_refused(image, api=api)
            self.assertEqual(400, resp.status_code)
            reasons.append(resp.json()['badRequest']['message'])
        # tests.functional.nova.test_host_detail has the rest.
        self.assertNotIn(ABSENT[0], reasons[0])
        self.assertIn(ABSENT[0], reasons[1])
        for reason in reasons:
            for detail in (self.root, 'placement', 'http', 'allocation',
                           'held_providers'):
                self.assertNotIn(detail, reason)
        self.assertEqual(self.before, self._read_back())

    def test_accepted_rebuild_goes_through(self):
        image = self.create_image(required=[GOLD])
        server = self.rebuild(self.server, image)
        self.assertEqual('ACTIVE', server['status'])
        self.assertEqual(image, server['image']['id'])

    def test_other_actions_and_same_image_pass_through(self):
        server = self.rebuild(self.server, self.old_image)
        self.assertEqual('ACTIVE', server['status'])
        self._reboot_server(server, hard=True)

    def test_requests_nova_refuses_anyway_pass_through(self):
        image = self.create_image(required=ABSENT)
        # A server its member locked: nova's own 409, not the pre-check's.
        user = self.api_fixture.api
        user.post_server_action(self.server['id'], {'lock': {}})
        resp = self._rebuild_refused(image, api=user)
        self.assertEqual(409, resp.status_code, resp.text)
        self.assertIn('locked', resp.text)
        user.post_server_action(self.server['id'], {'unlock': None})
        # Not a UUID: nova's schema answers.
        resp = self._rebuild_refused('http://glance/images/%s' % image)
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertNotIn(ABSENT[0], resp.text)

    def test_placement_down_follows_on_placement_error(self):
        image = self.create_image(required=[GOLD])
        self.flags(endpoint='http://127.0.0.1:9', endpoint_override=(
            'http://127.0.0.1:9'), group='placement')
        resp = self._rebuild_refused(image)
        self.assertEqual(409, resp.status_code)
        self.assertIn('try again later',
                      resp.json()['conflictingRequest']['message'])
        self.assertEqual(self.before, self._read_back())


class PrecheckLeavesNovaToAnswerTest(_PrecheckBase):
    """A rebuild nova refuses for its own reasons gets nova's answer.

    Each new image also requires a trait the host lacks: the pre-check
    would refuse it, but nova's own refusal comes first, as it would
    without the pre-check.
    """

    def _assert_nova_answers(self, image, code, text, body=None):
        body = body or {'rebuild': {'imageRef': image}}
        exc = self.assertRaises(
            api_client.OpenStackApiException, self.api.post_server_action,
            self.server['id'], body)
        resp = exc.response
        self.assertEqual(code, resp.status_code, resp.text)
        self.assertIn(text, resp.text)
        self.assertNotIn(ABSENT[0], resp.text)
        self.assertEqual(self.before, self._read_back())
        return resp

    def test_numa_topology_change(self):
        image = self.create_image(required=[ABSENT[0]], hw_numa_nodes='2')
        self._assert_nova_answers(image, 400, 'NUMA')

    def test_image_not_active(self):
        image = self.create_image(required=[ABSENT[0]])
        self.glance.images[image]['status'] = 'queued'
        self._assert_nova_answers(image, 400, 'is not active')

    def test_image_too_big_for_the_flavor(self):
        image = self.create_image(required=[ABSENT[0]])
        self.glance.images[image]['min_disk'] = 100
        self._assert_nova_answers(image, 400, 'smaller than the minimum')

    def test_body_nova_schema_refuses(self):
        image = self.create_image(required=[ABSENT[0]])
        self._assert_nova_answers(
            image, 400, 'Additional properties are not allowed',
            body={'rebuild': {'imageRef': image, 'no_such_field': 1}})

    def test_missing_server(self):
        image = self.create_image(required=[ABSENT[0]])
        exc = self.assertRaises(
            api_client.OpenStackApiException, self.api.post_server_action,
            uuidutils.generate_uuid(), {'rebuild': {'imageRef': image}})
        self.assertEqual(404, exc.response.status_code)

    def test_vtpm_server(self):
        # A server rebuilt to a vTPM image: nova refuses every later
        # rebuild of it (reject_vtpm_instances; a 400 in nova 34).
        traits = self.placement.get(
            '/resource_providers/%s/traits' % self.root,
            version='1.6').body['traits']
        # Everything a boot of the vTPM image asks of the host.
        self.set_traits(self.root, traits + test_derived.VTPM_TRAITS)
        vtpm = self.create_image(hw_tpm_version='2.0', hw_tpm_model='tpm-crb')
        server = self.rebuild(self.server, vtpm)
        self.assertEqual('ACTIVE', server['status'], server)
        self.before = self._read_back()
        image = self.create_image(required=[ABSENT[0]])
        self._assert_nova_answers(
            image, 400, "Operation 'rebuild' not supported for vTPM-enabled "
            'instance')


class PrecheckAnswerTest(_PrecheckBase):
    """The pre-check's own refusals: headers, 409 only for a retry."""

    def test_version_headers(self):
        self.api.microversion = '2.79'
        resp = self._rebuild_refused(self.create_image(required=ABSENT))
        self.assertEqual(400, resp.status_code)
        self.assertEqual('compute 2.79',
                         resp.headers['OpenStack-API-Version'])
        self.assertEqual('2.79', resp.headers['X-OpenStack-Nova-API-Version'])
        self.assertIn('OpenStack-API-Version', resp.headers['Vary'])

    def test_inconclusive_after_fallback_is_400(self):
        self.set_image_traits_opts(strategy='in_tree_candidates',
                                   fallback_strategy='in_tree_candidates')
        self.set_traits(self.root, [GOLD])
        self.fill_host(self.root)
        resp = self._rebuild_refused(self.create_image(required=[GOLD]))
        self.assertEqual(400, resp.status_code, resp.text)
        message = resp.json()['badRequest']['message']
        self.assertIn('could not be decided', message)
        self.assertNotIn('try again', message)
        self.assertEqual(self.before, self._read_back())

    def test_wrong_placement_passes_to_nova(self):
        # An endpoint that answers 404 for everything: a wrong
        # configuration, no fault of the user's, which no retry changes.
        # The pre-check lets nova go on; the conductor decides.
        wrong = base.CONF.placement.endpoint + '/no/such/service'
        self.flags(endpoint=wrong, endpoint_override=wrong,
                   group='placement')
        image = self.create_image(required=[GOLD])
        server = self.rebuild(self.server, image)
        self.assertIn('rebuild', self._read_back()[5])
        self.assertEqual('ERROR', server['status'])
        self.assertIn('the conductor decides', self.stdlog.logger.output)
