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
"""``nova-image-traits-status upgrade check`` against a real placement.

Placement is the real service on loopback (:mod:`tests.functional.base`),
reached through the ``[placement]`` options of a nova.conf written for the
test. The image check is exercised against nova's Glance stand-in in
:mod:`tests.functional.test_cli_audit_images`; here no image service
exists, which the check reports as a warning.
"""

import importlib.metadata
import io
import json
import os
import tempfile

import fixtures

from nova_image_traits.cmd import status
from nova_image_traits import series
from tests.functional import base

NO_IMAGES = RuntimeError('no image service in this test')


def write_conf(test, text):
    fd, path = tempfile.mkstemp(suffix='.conf')
    with os.fdopen(fd, 'w') as f:
        f.write(text)
    test.addCleanup(os.unlink, path)
    return path


def placement_conf(endpoint, token):
    return ('[placement]\nauth_type = admin_token\nendpoint = %s\n'
            'token = %s\nendpoint_override = %s\n' % (endpoint, token,
                                                      endpoint))


def run_status(test, conf_path, connection=NO_IMAGES, proc=None,
               uids=None):
    """Run the command; return (exit code, {check name: result})."""
    if proc is None:
        proc = test.useFixture(fixtures.TempDir()).path
    out = io.StringIO()
    test.useFixture(fixtures.MonkeyPatch('sys.stdout', out))
    rc = status.main(['--config-file', conf_path, 'upgrade', 'check',
                      '--json'], connection=connection, proc=proc,
                     uids=uids)
    try:
        body = json.loads(out.getvalue())
    except ValueError:
        test.fail('not JSON (rc %s): %r' % (rc, out.getvalue()))
    return rc, {c['check']: c for c in body['checks']}


class StatusPlacementTest(base.FunctionalTestCase):

    def conf(self, extra=''):
        return write_conf(self, placement_conf(self.endpoint,
                                               self.placement.token) + extra)

    def test_every_check_is_named_and_reported(self):
        rc, checks = run_status(self, self.conf(
            '[filter_scheduler]\navailable_filters = '
            'nova.scheduler.filters.all_filters\navailable_filters = '
            'nova_image_traits.filters.image_traits_filter.'
            'ImageTraitsFilter\nenabled_filters = ComputeFilter,'
            'ImageTraitsFilter\n'))

        self.assertEqual(
            ['[image_traits] options', 'Placement API version',
             'nova series', 'ImageTraitsFilter in the scheduler',
             'Conductor rebuild hook', 'Image traits known to placement'],
            list(checks))
        nova = checks['nova series']
        self.assertEqual(0, nova['result'], nova['details'])
        self.assertIn('series %s' % series.of_nova(
            importlib.metadata.version('nova')).name, nova['details'])
        self.assertEqual(0, checks['[image_traits] options']['result'])
        self.assertIn('Read from: ', checks['[image_traits] options'][
            'details'])
        placement = checks['Placement API version']
        self.assertEqual(0, placement['result'], placement['details'])
        self.assertIn('up to 1.', placement['details'])
        self.assertEqual(0, checks['ImageTraitsFilter in the scheduler'][
            'result'])
        self.assertIn('No conductor runs on this host',
                      checks['Conductor rebuild hook']['details'])
        images = checks['Image traits known to placement']
        self.assertEqual(1, images['result'])
        self.assertIn('no image service in this test', images['details'])
        # The worst result is the exit code: the image check warns.
        self.assertEqual(1, rc)

    def test_enabled_but_unavailable_filter_fails(self):
        rc, checks = run_status(self, self.conf(
            '[filter_scheduler]\nenabled_filters = ImageTraitsFilter\n'))
        self.assertEqual(2, rc)
        self.assertEqual(2, checks['ImageTraitsFilter in the scheduler'][
            'result'])

    def test_inconsistent_options_warn(self):
        rc, checks = run_status(self, self.conf(
            '[image_traits]\nstrategy = reject\n'
            'fallback_strategy = allocation_traits\n'
            'on_placement_error = accept\n'))
        result = checks['[image_traits] options']
        self.assertEqual(1, result['result'])
        self.assertIn('allocation_traits can be inconclusive',
                      result['details'])
        self.assertIn('on_placement_error = accept', result['details'])


class StatusConductorTest(base.FunctionalTestCase):
    """This host's conductors, and the hook against the installed nova."""

    def proc(self, *commands):
        proc = self.useFixture(fixtures.TempDir()).path
        for pid, argv in enumerate(commands, start=100):
            os.mkdir(os.path.join(proc, str(pid)))
            with open(os.path.join(proc, str(pid), 'cmdline'), 'wb') as f:
                f.write(b'\0'.join(a.encode() for a in argv) + b'\0')
        return proc

    def conf(self):
        return write_conf(self, placement_conf(self.endpoint,
                                               self.placement.token))

    def test_hooked_conductor_replaces_the_filter(self):
        proc = self.proc(['/usr/bin/python3',
                          '/usr/bin/nova-image-traits-conductor'])
        rc, checks = run_status(self, self.conf(), proc=proc,
                                uids={os.getuid()})
        hook = checks['Conductor rebuild hook']
        self.assertEqual(0, hook['result'], hook['details'])
        self.assertIn('Conductors 100 run nova-image-traits-conductor',
                      hook['details'])
        self.assertIn('matches the installed nova', hook['details'])
        # The hook names the series it verified.
        self.assertIn('(%s)' % series.of_nova(
            importlib.metadata.version('nova')).name, hook['details'])
        self.assertEqual(0, checks['ImageTraitsFilter in the scheduler'][
            'result'])

    def test_a_conductor_without_the_hook_warns(self):
        proc = self.proc(['/usr/bin/nova-image-traits-conductor'],
                         ['/usr/bin/nova-conductor', '--config-file', 'x'])
        rc, checks = run_status(self, self.conf(), proc=proc,
                                uids={os.getuid()})
        hook = checks['Conductor rebuild hook']
        self.assertEqual(1, hook['result'], hook['details'])
        self.assertIn('101 run nova-conductor without the hook',
                      hook['details'])
        # Not trusted: the same processes owned by someone else.
        rc, checks = run_status(self, self.conf(), proc=proc,
                                uids={os.getuid() + 1})
        self.assertIn('No conductor runs on this host',
                      checks['Conductor rebuild hook']['details'])

    def test_hook_that_does_not_fit_nova_is_a_failure(self):
        from nova.conductor import manager

        def changed(self, context, instance, image, new_argument):
            pass

        # NOTE(founders): not fixtures.MonkeyPatch, which keeps the old
        # signature.
        name = '_validate_image_traits_for_rebuild'
        original = manager.ComputeTaskManager.__dict__[name]
        setattr(manager.ComputeTaskManager, name, changed)
        self.addCleanup(setattr, manager.ComputeTaskManager, name, original)
        rc, checks = run_status(self, self.conf())
        hook = checks['Conductor rebuild hook']
        self.assertEqual(2, hook['result'], hook['details'])
        self.assertIn('_validate_image_traits_for_rebuild', hook['details'])
        self.assertEqual(2, rc)


class StatusOldPlacementTest(base.FunctionalTestCase):
    """A placement that stops at microversion 1.30."""

    placement_max_microversion = '1.30'

    def test_in_tree_candidates_needs_1_31(self):
        path = write_conf(self, placement_conf(
            self.endpoint, self.placement.token) +
            '[image_traits]\nstrategy = in_tree_candidates\n')
        rc, checks = run_status(self, path)
        result = checks['Placement API version']
        self.assertEqual(2, result['result'], result['details'])
        self.assertIn('up to 1.30', result['details'])
        self.assertIn('in_tree_candidates needs 1.31', result['details'])
        self.assertEqual(2, rc)

    def test_reads_nova_conf_where_nova_status_does(self):
        if os.path.exists('/etc/nova'):
            self.skipTest('this machine has its own /etc/nova')
        home = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.EnvironmentVariable('HOME', home))
        os.makedirs(os.path.join(home, '.nova', 'nova.conf.d'))
        nova_conf = os.path.join(home, '.nova', 'nova.conf')
        with open(nova_conf, 'w') as f:
            f.write(placement_conf(self.endpoint, self.placement.token))
        with open(os.path.join(home, '.nova', 'nova.conf.d',
                               'traits.conf'), 'w') as f:
            f.write('[image_traits]\nstrategy = in_tree_candidates\n')
        out = io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stdout', out))

        rc = status.main(['upgrade', 'check', '--json'],
                         connection=NO_IMAGES,
                         proc=self.useFixture(fixtures.TempDir()).path)

        checks = {c['check']: c for c in json.loads(out.getvalue())[
            'checks']}
        self.assertEqual(2, rc)
        self.assertIn('in_tree_candidates needs 1.31',
                      checks['Placement API version']['details'])
        self.assertIn(nova_conf, checks['[image_traits] options'][
            'details'])

    def test_tree_traits_works_but_warns_below_1_31(self):
        path = write_conf(self, placement_conf(
            self.endpoint, self.placement.token) +
            '[image_traits]\nstrategy = tree_traits\n')
        rc, checks = run_status(self, path)
        result = checks['Placement API version']
        self.assertEqual(1, result['result'], result['details'])
        self.assertIn('one request per trait below 1.31', result['details'])


class StatusNoPlacementTest(base.FunctionalTestCase):

    def test_placement_down_is_a_failure_naming_it(self):
        endpoint = self.endpoint
        self.server.stop()
        path = write_conf(self, placement_conf(endpoint, 'admin'))
        rc, checks = run_status(self, path)
        result = checks['Placement API version']
        self.assertEqual(2, result['result'])
        self.assertIn('Placement does not answer', result['details'])
        self.assertIn('unreachable', result['details'])
        self.assertEqual(2, rc)

    def test_missing_config_file_is_an_error(self):
        rc = status.main(['--config-file', '/nonexistent/nova.conf',
                          'upgrade', 'check'])
        self.assertEqual(255, rc)
