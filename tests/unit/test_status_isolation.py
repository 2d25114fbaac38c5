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
"""The status check of [scheduler] enable_isolated_aggregate_filtering."""

import os

import fixtures
from oslo_config import cfg
from oslo_upgradecheck import upgradecheck

from nova_image_traits.status import conductor
from nova_image_traits.status import isolation
from tests.unit import base


class ConfigArgsTest(base.TestCase):

    def test_plain_command_line(self):
        self.assertEqual(
            ['--config-file', '/etc/nova/nova.conf', '--config-dir',
             '/etc/nova/nova.conf.d'],
            isolation.config_args([
                '/usr/bin/python3', '/usr/bin/nova-conductor',
                '--config-file', '/etc/nova/nova.conf',
                '--config-dir=/etc/nova/nova.conf.d', '--debug']))

    def test_master_title_keeps_the_command_line(self):
        self.assertEqual(
            ['--config-file', '/etc/nova/nova-cond.conf'],
            isolation.config_args([
                'nova-conductor: master process [/usr/bin/nova-conductor '
                '--config-file /etc/nova/nova-cond.conf]']))

    def test_worker_title_shows_nothing(self):
        self.assertIsNone(isolation.config_args([
            'nova-conductor: ConductorManager worker(0)']))

    def test_no_flags(self):
        self.assertEqual([], isolation.config_args(['nova-conductor']))


class CheckTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path

    def write(self, name, value):
        path = os.path.join(self.dir, name)
        with open(path, 'w') as f:
            f.write('[scheduler]\nenable_isolated_aggregate_filtering = %s\n'
                    % value)
        return path

    def make_conf(self, value):
        conf = cfg.ConfigOpts()
        conf(args=['--config-file', self.write('here.conf', value)])
        return conf

    def conductor(self, pid, path):
        return conductor.Conductor(
            pid=pid, uid=0, hooked=True,
            argv=['nova-image-traits-conductor: master process '
                  '[nova-image-traits-conductor --config-file %s]' % path])

    def test_same_value_succeeds(self):
        result = isolation.check(self.make_conf(True), [
            self.conductor(10, self.write('c.conf', True))])
        self.assertEqual(upgradecheck.Code.SUCCESS, result.code)
        self.assertIn('is True in the configuration read here',
                      result.details)

    def test_another_value_warns_naming_the_conductor(self):
        result = isolation.check(self.make_conf(True), [
            self.conductor(10, self.write('c.conf', False)),
            conductor.Conductor(11, 0, True, [
                'nova-image-traits-conductor: ConductorManager worker(0)'])])
        self.assertEqual(upgradecheck.Code.WARNING, result.code)
        self.assertIn('another value: 10 (False)', result.details)
        self.assertNotIn('11', result.details)

    def test_every_conductor_that_differs_is_named(self):
        result = isolation.check(self.make_conf(True), [
            self.conductor(10, self.write('c.conf', False)),
            self.conductor(12, self.write('d.conf', True)),
            self.conductor(14, self.write('e.conf', False))])
        self.assertEqual(upgradecheck.Code.WARNING, result.code)
        self.assertIn('another value: 10 (False); 14 (False).',
                      result.details)
        self.assertNotIn('12 (', result.details)

    def test_unreadable_configuration_is_said(self):
        result = isolation.check(self.make_conf(False), [
            self.conductor(10, os.path.join(self.dir, 'missing.conf'))])
        self.assertEqual(upgradecheck.Code.SUCCESS, result.code)
        self.assertIn('conductors 10 (', result.details)

    def test_no_conductor(self):
        result = isolation.check(self.make_conf(False), [])
        self.assertEqual(upgradecheck.Code.SUCCESS, result.code)
        self.assertIn('is False', result.details)
