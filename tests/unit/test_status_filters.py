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
"""The status check of the pre-check's [filter_scheduler]."""

import os

import fixtures
from oslo_config import cfg
from oslo_upgradecheck import upgradecheck

from nova_image_traits import conf as nit_conf
from nova_image_traits.status import conductor
from nova_image_traits.status import config
from nova_image_traits.status import filters
from tests.unit import base

ON = '[image_traits]\nprecheck_scheduler_filters = True\n'


class CheckTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, 'w') as f:
            f.write(text)
        return path

    def make_conf(self, text):
        conf = cfg.ConfigOpts()
        nit_conf.register_opts(conf)
        config.register_opts(conf)
        filters.register_opts(conf)
        conf(args=['--config-file', self.write('here.conf', text)])
        return conf

    def scheduler(self, pid, path):
        return conductor.Conductor(
            pid=pid, uid=0, hooked=False,
            argv=['nova-scheduler: master process [nova-scheduler '
                  '--config-file %s]' % path])

    def test_off_compares_nothing(self):
        result = filters.check(self.make_conf(''), [
            self.scheduler(10, os.path.join(self.dir, 'missing.conf'))])
        self.assertEqual(upgradecheck.Code.SUCCESS, result.code)
        self.assertIn('is off', result.details)

    def test_the_same_filters_succeed(self):
        text = ('[filter_scheduler]\nenabled_filters = ComputeFilter,'
                'ImagePropertiesFilter\n')
        result = filters.check(self.make_conf(ON + text), [
            self.scheduler(10, self.write('s.conf', text))])
        self.assertEqual(upgradecheck.Code.SUCCESS, result.code,
                         result.details)
        self.assertIn('(ComputeFilter, ImagePropertiesFilter)',
                      result.details)
        self.assertNotIn('No nova-scheduler', result.details)

    def test_nova_s_defaults_here_and_other_filters_there_warn(self):
        # The case the option's help warns of: the API host keeps nova's
        # default list, with ImagePropertiesFilter, the scheduler does not.
        there = self.write('s.conf', '[filter_scheduler]\nenabled_filters '
                           '= ComputeFilter\nisolated_images = a,b\n')
        result = filters.check(self.make_conf(ON), [
            self.scheduler(10, there),
            conductor.Conductor(11, 0, False, [
                'nova-scheduler: SchedulerManager worker(0)'])])
        self.assertEqual(upgradecheck.Code.WARNING, result.code)
        self.assertIn('10 (enabled_filters, isolated_images)',
                      result.details)
        self.assertNotIn('11', result.details)

    def test_a_nova_without_the_names_warns(self):
        try:
            from nova_image_traits.api import host_filters
        except ImportError:
            self.skipTest('nova is not installed')
        self.useFixture(fixtures.MockPatchObject(
            host_filters, 'NAMES', (('nova.objects', 'NoSuchThing.x'),)))
        result = filters.check(self.make_conf(ON), [])
        self.assertEqual(upgradecheck.Code.WARNING, result.code)
        self.assertIn('nova.objects.NoSuchThing.x does not exist',
                      result.details)

    def test_unreadable_and_absent_schedulers_are_said(self):
        result = filters.check(self.make_conf(ON), [
            self.scheduler(10, os.path.join(self.dir, 'missing.conf'))])
        self.assertEqual(upgradecheck.Code.SUCCESS, result.code)
        self.assertIn('schedulers 10 (', result.details)
        result = filters.check(self.make_conf(ON), [])
        self.assertIn('No nova-scheduler runs on this host', result.details)


class FindSchedulersTest(base.TestCase):

    def test_schedulers_are_found_by_name(self):
        proc = self.useFixture(fixtures.TempDir()).path
        scheduler = [b'/usr/bin/python3', b'/usr/bin/nova-scheduler',
                     b'--config-file', b'x']
        for pid, argv in ((5, scheduler),
                          (6, [b'nova-conductor: master process [x]'])):
            os.makedirs(os.path.join(proc, str(pid)))
            with open(os.path.join(proc, str(pid), 'cmdline'), 'wb') as f:
                f.write(b'\0'.join(argv))
        uids = {os.getuid()}
        self.assertEqual([5], [s.pid for s in conductor.find(
            proc, uids, names=(conductor.SCHEDULER,))])
        self.assertEqual([6], [c.pid for c in conductor.find(proc, uids)])
