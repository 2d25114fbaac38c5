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
"""The policy rules, as oslo.policy and its sample generator read them."""

import configparser
import os

import fixtures
from oslo_config import cfg
from oslo_policy import generator
from oslo_policy import policy

from nova_image_traits import policies
from nova_image_traits.policies import refusal
from tests.unit import base

TOP = os.path.join(os.path.dirname(__file__), '..', '..')


class RulesTest(base.TestCase):

    def test_host_detail_is_admin_only_and_project_scoped(self):
        rules = {r.name: r for r in policies.list_rules()}
        self.assertEqual([refusal.HOST_DETAIL], sorted(rules))
        rule = rules['os_compute_api:image_traits:refusal:host_detail']
        self.assertIsInstance(rule, policy.DocumentedRuleDefault)
        self.assertEqual('rule:context_is_admin', rule.check_str)
        self.assertEqual(['project'], rule.scope_types)
        self.assertEqual([{'method': 'POST',
                           'path': '/servers/{server_id}/action (rebuild)'}],
                         rule.operations)

    def test_published_as_an_oslo_policy_entry_point(self):
        parser = configparser.ConfigParser()
        parser.read(os.path.join(TOP, 'setup.cfg'))
        self.assertEqual(
            'nova_image_traits = nova_image_traits.policies:list_rules',
            parser['entry_points']['oslo.policy.policies'].strip())

    def test_the_sample_generator_prints_it(self):
        # oslopolicy-sample-generator --namespace nova_image_traits, from
        # the installed entry point.
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'policy.yaml')
        generator.generate_sample(
            args=['--namespace', 'nova_image_traits', '--output-file', path],
            conf=cfg.ConfigOpts())
        with open(path) as f:
            sample = f.read()
        self.assertIn('#"os_compute_api:image_traits:refusal:host_detail": '
                      '"rule:context_is_admin"', sample)
        self.assertIn('# POST  /servers/{server_id}/action (rebuild)', sample)

    def test_an_override_opens_it(self):
        conf = cfg.ConfigOpts()
        conf(args=[])  # oslo.policy 4.5 looks for its file at once
        enforcer = policy.Enforcer(conf, use_conf=False)
        enforcer.register_defaults(policies.list_rules())
        enforcer.register_default(policy.RuleDefault(
            'context_is_admin', 'role:admin'))
        creds = {'roles': ['member'], 'project_id': 'p'}
        target = {'project_id': 'p'}
        enforcer.load_rules()
        self.assertFalse(enforcer.enforce(refusal.HOST_DETAIL, target,
                                          creds))
        enforcer.set_rules(policy.Rules.from_dict(
            {refusal.HOST_DETAIL: 'project_id:%(project_id)s'}),
            overwrite=False)
        self.assertTrue(enforcer.enforce(refusal.HOST_DETAIL, target, creds))
