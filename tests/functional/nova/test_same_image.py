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
"""A rebuild with the server's own image, whose properties changed (#26).

nova schedules and checks nothing when the image id stays the same, but
records the image's current properties and applies them. The pre-check
judges such an image as a new one (``[image_traits]
judge_same_image_rebuild``); an unchanged image is not judged.
"""

import fixtures

from nova import context as nova_context
from nova import objects

from nova_image_traits.api import rebuild_wrapper
from nova_image_traits.placement import client as nit_client
from tests.functional.nova import test_derived
from tests.functional.nova import test_precheck

ABSENT = test_precheck.ABSENT
GOLD = test_precheck.GOLD


class SameImagePrecheckTest(test_precheck._PrecheckBase):

    def setUp(self):
        super().setUp()
        self.sent = []
        real_request = nit_client.PlacementClient.request

        def request(client, url, *args, **kwargs):
            self.sent.append(url)
            return real_request(client, url, *args, **kwargs)
        self.useFixture(fixtures.MockPatchObject(
            nit_client.PlacementClient, 'request', request))
        self.decided = []
        real_decide = rebuild_wrapper.nit_decide.decide

        def decide(*args, **kwargs):
            self.decided.append(real_decide(*args, **kwargs))
            return self.decided[-1]
        self.useFixture(fixtures.MockPatchObject(
            rebuild_wrapper.nit_decide, 'decide', decide))

    def _change_image(self, required=(), **properties):
        props = self.glance.images[self.old_image]['properties']
        props.update({'trait:%s' % t: 'required' for t in required})
        props.update(properties)

    def _spec_traits(self):
        spec = objects.RequestSpec.get_by_instance_uuid(
            nova_context.get_admin_context(), self.server['id'])
        return set(spec.image.properties.get('traits_required') or ())

    def test_gained_trait_refused_and_untouched(self):
        self._change_image(required=[ABSENT[0]])
        resp = self._rebuild_refused(self.old_image, api=self.admin_api)
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertIn(ABSENT[0], resp.json()['badRequest']['message'])
        # The system metadata still holds the properties it recorded.
        self.assertEqual(self.before, self._read_back())
        self.assertNotIn('image_trait:%s' % ABSENT[0], self.before[3])
        self.assertEqual('ACTIVE',
                         self.api.get_server(self.server['id'])['status'])
        self.assertIn('judged as a new image', self.stdlog.logger.output)

    def test_gained_derived_requirement_refused(self):
        # The host has no TPM trait; the image now asks for a vTPM.
        self._change_image(**test_derived.VTPM)
        resp = self._rebuild_refused(self.old_image, api=self.admin_api)
        self.assertEqual(400, resp.status_code, resp.text)
        self.assertIn('hw_tpm_version=2.0',
                      resp.json()['badRequest']['message'])
        self.assertEqual(self.before, self._read_back())

    def test_unchanged_image_is_not_judged(self):
        server = self.rebuild(self.server, self.old_image)
        self.assertEqual('ACTIVE', server['status'])
        self.assertEqual([None], self.decided)
        self.assertEqual([], self.sent)
        self.assertNotIn('Rebuild image traits decision',
                         self.stdlog.logger.output)

    def test_a_property_nova_does_not_read_is_no_change(self):
        self._change_image(description='patched on Tuesday')
        server = self.rebuild(self.server, self.old_image)
        self.assertEqual('ACTIVE', server['status'])
        self.assertEqual([None], self.decided)
        self.assertEqual([], self.sent)

    def test_changed_image_the_host_satisfies_is_accepted(self):
        self._change_image(required=[GOLD])
        server = self.rebuild(self.server, self.old_image)
        self.assertEqual('ACTIVE', server['status'])
        self.assertEqual(1, len(self.decided))
        self.assertTrue(self.decided[0].allowed)
        self.assertNotEqual([], self.sent)
        # nova's own inconsistency: the system metadata holds the new
        # properties, the request spec the old ones.
        self.assertEqual('required', self._read_back()[3].get(
            'image_trait:%s' % GOLD))
        self.assertNotIn(GOLD, self._spec_traits())

    def test_system_metadata_of_another_image_is_not_judged(self):
        # A rebuild refused by the scheduler's filter leaves the refused
        # image's system metadata behind (nova rolls back image_ref only):
        # the server's own image, rebuilt again, is not judged against it.
        other = self.create_image(required=[GOLD])
        ctxt = nova_context.get_admin_context()
        mapping = objects.InstanceMapping.get_by_instance_uuid(
            ctxt, self.server['id'])
        with nova_context.target_cell(ctxt, mapping.cell_mapping) as cctxt:
            inst = objects.Instance.get_by_uuid(
                cctxt, self.server['id'], expected_attrs=['system_metadata'])
            inst.system_metadata['image_base_image_ref'] = other
            inst.system_metadata['image_trait:%s' % GOLD] = 'required'
            inst.save()
        self._change_image(required=[ABSENT[0]])
        server = self.rebuild(self.server, self.old_image)
        self.assertEqual('ACTIVE', server['status'])
        self.assertEqual([None], self.decided)
        self.assertIn('describes another image', self.stdlog.logger.output)

    def test_switched_off_as_before(self):
        self.flags(judge_same_image_rebuild=False, group='image_traits')
        self._change_image(required=[ABSENT[0]])
        server = self.rebuild(self.server, self.old_image)
        # Accepted by nova, undecided: the server now records a trait its
        # host lacks.
        self.assertEqual('ACTIVE', server['status'])
        self.assertEqual([None], self.decided)
        self.assertEqual([], self.sent)
        self.assertEqual('required', self._read_back()[3].get(
            'image_trait:%s' % ABSENT[0]))
