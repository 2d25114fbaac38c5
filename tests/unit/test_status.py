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
"""The checks of nova-image-traits-status that read nova.conf or /proc."""

import os
import sys
import tempfile
from unittest import mock

from oslo_upgradecheck import upgradecheck

from nova_image_traits.status import conductor
from nova_image_traits.status import config
from nova_image_traits.status import derivation
from tests.unit import base

Code = upgradecheck.Code
PATH = config.FILTER_PATH


class OptionsCheckTest(base.TestCase):

    def setUp(self):
        super().setUp()
        config.register_opts(self.conf)

    def check(self, **kwargs):
        for name, value in kwargs.items():
            self.conf.set_override(name, value, group='image_traits')
        return config.check_options(self.conf)

    def test_defaults_are_consistent(self):
        result = self.check()
        self.assertEqual(Code.SUCCESS, result.code)
        self.assertIn('strategy = held_providers', result.details)

    def test_fallback_equal_to_an_inconclusive_strategy_warns(self):
        result = self.check(strategy='in_tree_candidates',
                            fallback_strategy='in_tree_candidates')
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn('equals strategy', result.details)

    def test_fallback_equal_to_a_deciding_strategy_is_fine(self):
        result = self.check(strategy='root_traits',
                            fallback_strategy='root_traits')
        self.assertEqual(Code.SUCCESS, result.code)

    def test_fallbacks_that_may_be_inconclusive_warn(self):
        for fallback in ('in_tree_candidates', 'allocation_traits',
                         'held_providers'):
            result = self.check(strategy='tree_traits',
                                fallback_strategy=fallback)
            self.assertEqual(Code.WARNING, result.code, fallback)
            self.assertIn('%s can be inconclusive' % fallback,
                          result.details)

    def test_accept_on_error_with_the_strict_strategy_warns(self):
        result = self.check(strategy='reject', on_placement_error='accept')
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn('on_placement_error = accept', result.details)
        result = self.check(strategy='root_traits')
        self.assertEqual(Code.SUCCESS, result.code)


class FilterCheckTest(base.TestCase):

    def setUp(self):
        super().setUp()
        config.register_opts(self.conf)

    def check(self, available, enabled, hooked=False):
        self.conf.set_override('available_filters', available,
                               group='filter_scheduler')
        self.conf.set_override('enabled_filters', enabled,
                               group='filter_scheduler')
        return config.check_filter(self.conf, hooked_conductor=hooked)

    def test_nova_defaults_do_not_include_the_filter(self):
        self.assertEqual([config.ALL_FILTERS],
                         self.conf.filter_scheduler.available_filters)
        result = config.check_filter(self.conf)
        self.assertEqual(Code.WARNING, result.code)

    def test_available_and_enabled(self):
        result = self.check([config.ALL_FILTERS, PATH],
                            ['ComputeFilter', 'ImageTraitsFilter'])
        self.assertEqual(Code.SUCCESS, result.code)

    def test_enabled_but_not_available_fails(self):
        result = self.check([config.ALL_FILTERS],
                            ['ComputeFilter', 'ImageTraitsFilter'])
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('refuse to start', result.details)
        self.assertIn(PATH, result.details)

    def test_available_but_not_enabled_warns(self):
        result = self.check([config.ALL_FILTERS, PATH], ['ComputeFilter'])
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn('never runs', result.details)

    def test_neither_is_fine_with_the_hook(self):
        result = self.check([config.ALL_FILTERS], ['ComputeFilter'],
                            hooked=True)
        self.assertEqual(Code.SUCCESS, result.code)
        self.assertIn('conductor hook decides', result.details)


class ConductorProcessesTest(base.TestCase):
    """A process table laid out as /proc is, in a temporary directory."""

    def setUp(self):
        super().setUp()
        self.proc = tempfile.mkdtemp()
        self.addCleanup(self._remove)

    def _remove(self):
        for root, dirs, files in os.walk(self.proc, topdown=False):
            for name in files:
                os.unlink(os.path.join(root, name))
            for name in dirs:
                os.rmdir(os.path.join(root, name))
        os.rmdir(self.proc)

    def process(self, pid, *argv):
        os.mkdir(os.path.join(self.proc, str(pid)))
        with open(os.path.join(self.proc, str(pid), 'cmdline'), 'wb') as f:
            f.write(b'\0'.join(a.encode() for a in argv) + b'\0')

    def test_finds_hooked_and_plain_conductors_of_trusted_owners(self):
        self.process(10, '/usr/bin/python3',
                     '/usr/local/bin/nova-image-traits-conductor',
                     '--config-file', '/etc/nova/nova.conf')
        self.process(11, '/usr/bin/nova-conductor')
        self.process(12, 'vim', 'nova-image-traits-conductor')
        self.process(13, 'bash', '-c', 'nova-image-traits-conductor')
        self.process(14, 'python3', '-m', 'nova_image_traits')
        os.mkdir(os.path.join(self.proc, 'self'))

        found = conductor.find(self.proc, uids={os.getuid()})

        self.assertEqual([(10, True), (11, False)],
                         [(c.pid, c.hooked) for c in found])
        self.assertEqual('--config-file', found[0].argv[2])

    def test_titles_rewritten_by_oslo_service(self):
        # As a real service shows them: one string each, NUL-padded.
        self.process(20, 'nova-image-traits-conductor: master process '
                     '[/usr/bin/nova-image-traits-conductor --config-file '
                     '/etc/nova/nova.conf]', '', '')
        self.process(21, 'nova-image-traits-conductor: ServiceWrapper '
                     'worker(0)')
        self.process(22, 'nova-conductor: master process '
                     '[/usr/bin/nova-conductor]')
        self.process(23, 'nova-conductor: ServiceWrapper worker(1)')
        # Not conductors: another program's title, a path before the colon.
        self.process(24, 'nova-scheduler: ServiceWrapper worker(0)')
        self.process(25, '/tmp/nova-conductor: master process [x]')
        found = conductor.find(self.proc, uids={os.getuid()})
        self.assertEqual([(20, True), (21, True), (22, False), (23, False)],
                         [(c.pid, c.hooked) for c in found])

    def test_processes_of_other_users_are_not_trusted(self):
        self.process(10, 'nova-image-traits-conductor')
        self.assertEqual([], conductor.find(self.proc,
                                            uids={os.getuid() + 1}))

    def test_root_and_nova_are_trusted_by_default(self):
        self.assertIn(0, conductor.trusted_uids())
        self.assertEqual({0}, conductor.trusted_uids(users=()))

    def test_missing_process_table(self):
        self.assertEqual([], conductor.find(os.path.join(self.proc, 'x')))


class DerivationCheckTest(base.TestCase):
    """Without nova, no derivation is tried (tests.functional tries one)."""

    def test_without_nova_says_so(self):
        with mock.patch.dict(sys.modules, {'nova': None}):
            result = derivation.check_derivation()
        self.assertEqual(Code.SUCCESS, result.code)
        self.assertIn('nova is not installed here', result.details)
