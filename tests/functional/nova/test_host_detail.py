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
"""Who reads the host's detail of a refused rebuild, in real nova.

A tenant (``self.api_fixture.api``: user ``fake``, roles reader and
member, not an admin to nova's views or policy) and an admin
(``self.admin_api``) rebuild the same server to an image requiring
traits its host lacks. The tenant's view names none of them: neither the
pre-check's 400 nor the conductor's fault, whose details nova shows to
admins only. The admin's view names them, and ``policy.yaml`` can open
the pre-check's 400 to tenants.
"""

import os

import fixtures

from nova import policy as nova_policy
from nova.tests.functional.api import client as api_client

from nova_image_traits.conductor import hook
from nova_image_traits.policies import refusal as refusal_policies
from tests.functional.nova import base
from tests.functional.nova import test_refusal

GOLD = 'CUSTOM_GOLD'
ABSENT = ['CUSTOM_SECRET_RACK_%d' % i for i in range(3)]
TENANT = ("This server's host does not offer what the new image requires. "
          'Rebuild with another image, or ask your cloud operator.')


class _HostDetailBase(base.ImageTraitsTestBase):

    def setUp(self):
        super().setUp()
        root, _child = self.start_nested_compute('host1')
        hook.install()
        self.addCleanup(hook.uninstall)
        for trait in [GOLD] + ABSENT:
            self.placement.put('/traits/%s' % trait, None, version='1.6')
        self.set_traits(root, [GOLD])
        self.server = self.boot(self.create_flavor(), self.create_image())
        self.image = self.create_image(required=ABSENT)
        self.tenant = self.api_fixture.api
        # Not an admin to nova's policy, nor to its views.
        self.assertNotIn('admin', self.tenant.roles)
        self.assertNotEqual('admin', self.tenant.auth_user)

    def assert_names_nothing(self, text):
        for word in ABSENT + ['CUSTOM_', 'aggregate', 'missing', 'lacks']:
            self.assertNotIn(word, text)

    def assert_names_all(self, text):
        for trait in ABSENT:
            self.assertIn(trait, text)


class PrecheckHostDetailTest(_HostDetailBase):

    ENABLE_API_PRECHECK = True

    def _refused(self, api):
        exc = self.assertRaises(
            api_client.OpenStackApiException, api.post_server_action,
            self.server['id'], {'rebuild': {'imageRef': self.image}})
        self.assertEqual(400, exc.response.status_code, exc.response.text)
        return exc.response.json()['badRequest']['message']

    def test_the_tenant_reads_no_host_detail(self):
        message = self._refused(self.tenant)
        self.assertEqual(TENANT, message)
        self.assert_names_nothing(message)
        # The operator sees who was refused.
        self.assertIn('refused by the image traits pre-check for user fake '
                      'of project %s' % self.tenant.project_id,
                      self.stdlog.logger.output)
        self.assertIn('host_detail=withheld', self.stdlog.logger.output)

    def test_the_admin_reads_it(self):
        message = self._refused(self.admin_api)
        self.assert_names_all(message)
        self.assertIn('host_detail=shown', self.stdlog.logger.output)

    def test_policy_yaml_opens_it_to_tenants(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'policy.yaml')
        with open(path, 'w') as f:
            f.write('"%s": "role:member"\n' % refusal_policies.HOST_DETAIL)
        self.flags(policy_file=path, group='oslo_policy')
        nova_policy.reset()
        message = self._refused(self.tenant)
        self.assert_names_all(message)
        self.assertEqual('ACTIVE',
                         self.tenant.get_server(self.server['id'])['status'])

    def test_a_check_that_fails_withholds_it(self):
        self.useFixture(fixtures.MockPatch(
            'nova_image_traits.api.policy._register',
            side_effect=RuntimeError('no enforcer')))
        self.assertEqual(TENANT, self._refused(self.admin_api))
        self.assertIn('The policy check of %s failed' %
                      refusal_policies.HOST_DETAIL,
                      self.stdlog.logger.output)


class ConductorHostDetailTest(_HostDetailBase):
    """Without the pre-check, the conductor's fault: one for everyone."""

    def setUp(self):
        super().setUp()
        # The tenant rebuilds; nova's API accepts and the hook refuses.
        self.tenant.post_server_action(
            self.server['id'], {'rebuild': {'imageRef': self.image}})
        self.wait_until_settled(self.server)
        # nova records the fault, then the event; the hook logs last.
        test_refusal.wait_for_log(self, 'refused by the image traits check')

    def test_the_tenant_reads_no_host_detail(self):
        server = self.tenant.get_server(self.server['id'])
        self.assertEqual('ERROR', server['status'])
        fault = server['fault']
        self.assertEqual('No valid host was found. ' + TENANT,
                         fault['message'])
        # nova keeps details for code 500 and shows them to admins only.
        self.assertEqual(500, fault['code'])
        self.assertNotIn('details', fault)
        self.assert_names_nothing(repr(fault))

    def test_the_admin_reads_it_in_the_details(self):
        server = self.admin_api.get_server(self.server['id'])
        fault = server['fault']
        self.assertEqual('No valid host was found. ' + TENANT,
                         fault['message'])
        self.assert_names_all(fault['details'])
        reason = self.fault_reason(server)
        self.assertTrue(reason.startswith('No valid host was found. %s' %
                                          ', '.join(ABSENT)), reason)
        # And the operator's log line.
        self.assertIn('missing=%s' % ','.join(ABSENT),
                      self.stdlog.logger.output)

    def test_the_rebuild_event_names_nothing(self):
        self.admin_api.microversion = '2.84'
        actions = self.admin_api.get_instance_actions(self.server['id'])
        rebuild = [a for a in actions if a['action'] == 'rebuild'][0]
        events = self.admin_api.get_instance_action_details(
            self.server['id'], rebuild['request_id'])['events']
        event = [e for e in events if e['event'] == 'rebuild_server'][0]
        self.assertEqual('No valid host was found. ' + TENANT,
                         event['details'])
