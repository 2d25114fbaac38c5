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
"""Configuration options: registration, defaults, validation, listing."""

import os
import tempfile

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from stevedore import extension

from nova_image_traits import conf as nit_conf
from nova_image_traits.conf import image_traits
from nova_image_traits import strategies
from tests.unit import base

OPTIONS = {'strategy', 'fallback_strategy', 'on_placement_error',
           'decision_timeout', 'max_image_traits', 'max_url_length',
           'judge_derived_requirements', 'judge_same_image_rebuild',
           'placement_version_ttl', 'hook_on_unsupported_nova',
           'precheck_on_unsupported_nova', 'precheck_scheduler_filters'}


class ListOptsTest(base.TestCase):

    def test_list_opts(self):
        listed = nit_conf.list_opts()
        self.assertEqual(1, len(listed))
        group, opts = listed[0]
        self.assertEqual('image_traits', group.name)
        self.assertTrue(group.help.strip())
        self.assertEqual(OPTIONS, {o.name for o in opts})
        for opt in opts:
            self.assertGreater(len(opt.help.strip()), 40, opt.name)

    def test_strategy_choices_are_the_plugins(self):
        plugins = extension.ExtensionManager(strategies.NAMESPACE).names()
        for name in ('strategy', 'fallback_strategy'):
            opt = self.conf._get_opt_info(name, 'image_traits')['opt']
            choices = [c for c, _help in opt.type.choices.items()]
            self.assertEqual(sorted(plugins), sorted(choices))
            for _choice, text in opt.type.choices.items():
                self.assertTrue(text)


class DefaultsTest(base.TestCase):

    def test_defaults(self):
        opts = self.conf.image_traits
        self.assertEqual('held_providers', opts.strategy)
        self.assertEqual('root_traits', opts.fallback_strategy)
        self.assertEqual('reject', opts.on_placement_error)
        self.assertEqual(20.0, opts.decision_timeout)
        self.assertEqual(64, opts.max_image_traits)
        self.assertEqual(8000, opts.max_url_length)
        self.assertFalse(opts.precheck_scheduler_filters)
        self.assertTrue(opts.judge_same_image_rebuild)

    def test_placement_options_registered_outside_nova(self):
        self.assertEqual('placement', self.conf.placement.service_type)
        self.assertEqual(['internal', 'public'],
                         self.conf.placement.valid_interfaces)
        self.assertIsNone(self.conf.placement.timeout)
        self.assertIsNone(self.conf.placement.auth_type)


class ValidationTest(base.TestCase):

    def test_invalid_choice_override(self):
        for name in ('strategy', 'fallback_strategy'):
            self.assertRaises(ValueError, self.flags, **{name: 'accept'})
        self.assertRaises(ValueError, self.flags,
                          on_placement_error='ignore')

    def test_bounds(self):
        self.assertRaises(ValueError, self.flags, decision_timeout=0)
        self.assertRaises(ValueError, self.flags, max_image_traits=0)
        self.assertRaises(ValueError, self.flags, max_url_length=100)

    def test_invalid_choice_in_a_config_file(self):
        fd, path = tempfile.mkstemp(suffix='.conf')
        self.addCleanup(os.unlink, path)
        with os.fdopen(fd, 'w') as f:
            f.write('[image_traits]\nstrategy = accept\n')
        conf = cfg.ConfigOpts()
        nit_conf.register_opts(conf)
        conf(['--config-file', path])
        self.assertRaises(cfg.ConfigFileValueError,
                          getattr, conf.image_traits, 'strategy')

    def test_valid_config_file(self):
        fd, path = tempfile.mkstemp(suffix='.conf')
        self.addCleanup(os.unlink, path)
        with os.fdopen(fd, 'w') as f:
            f.write('[image_traits]\nstrategy = tree_traits\n'
                    'on_placement_error = accept\n')
        conf = cfg.ConfigOpts()
        nit_conf.register_opts(conf)
        conf(['--config-file', path])
        self.assertEqual('tree_traits', conf.image_traits.strategy)
        self.assertEqual('accept', conf.image_traits.on_placement_error)


class RegisterTest(base.TestCase):

    def test_idempotent(self):
        self.flags(strategy='reject')
        nit_conf.register_opts(self.conf)
        nit_conf.register_opts(self.conf)
        self.assertEqual('reject', self.conf.image_traits.strategy)
        self.assertEqual(OPTIONS, set(self.conf.image_traits))

    def test_on_a_conf_with_nova_placement_options(self):
        # What nova.conf.placement does, without importing nova.
        conf = cfg.ConfigOpts()
        conf.register_group(cfg.OptGroup(
            'placement', title='Placement Service Options'))
        ks_loading.register_session_conf_options(conf, 'placement')
        ks_loading.register_auth_conf_options(conf, 'placement')
        ks_loading.register_adapter_conf_options(
            conf, 'placement', include_deprecated=False)
        conf.set_default('valid_interfaces', ['internal'], group='placement')
        before = set(conf.placement)
        nit_conf.register_opts(conf)
        nit_conf.register_opts(conf)
        conf([])
        conf.set_override('timeout', 7, group='placement')
        self.assertEqual(before, set(conf.placement))
        self.assertEqual(7, conf.placement.timeout)
        # nova's defaults are left alone
        self.assertEqual(['internal'], conf.placement.valid_interfaces)
        self.assertEqual('held_providers', conf.image_traits.strategy)

    def test_group_registers_once(self):
        conf = cfg.ConfigOpts()
        image_traits.register_opts(conf)
        image_traits.register_opts(conf)
        conf([])
        self.assertEqual(OPTIONS, set(conf.image_traits))

    def test_overrides_do_not_leak_between_configurations(self):
        first = cfg.ConfigOpts()
        second = cfg.ConfigOpts()
        for conf in (first, second):
            nit_conf.register_opts(conf)
            conf([])
        first.set_override('fallback_strategy', 'tree_traits',
                           group='image_traits')
        self.assertEqual('tree_traits', first.image_traits.fallback_strategy)
        self.assertEqual('root_traits',
                         second.image_traits.fallback_strategy)
