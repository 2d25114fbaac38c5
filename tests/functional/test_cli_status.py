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

import http.server
import importlib.metadata
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

import fixtures
from oslo_config import fixture as config_fixture
import testtools

from nova_image_traits.cmd import status
from nova_image_traits import series
from nova_image_traits.status import conductor
from nova_image_traits.status import derivation
from tests.functional import base
from tests.unit import base as unit_base

Code = derivation.Code
HOOKED = conductor.HOOKED
PLAIN = conductor.PLAIN

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
             'nova series', "nova's derived requirements",
             'ImageTraitsFilter in the scheduler',
             'Conductor rebuild hook', 'Aggregate isolation set alike',
             'nova-api pre-check', "The pre-check's scheduler filters",
             'Image traits known to placement'],
            list(checks))
        self.assertEqual(0, checks["The pre-check's scheduler filters"][
            'result'])
        self.assertEqual(0, checks['Aggregate isolation set alike'][
            'result'])
        derived = checks["nova's derived requirements"]
        self.assertEqual(0, derived['result'], derived['details'])
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

    def _paste(self, pipelines):
        text = ''.join(
            '[composite:%s]\nuse = call:nova.api.auth:pipeline_factory_v21\n'
            'keystone = %s\n\n' % (name, pipeline)
            for name, pipeline in pipelines.items())
        text += ('[filter:image_traits_precheck]\npaste.filter_factory = '
                 'nova_image_traits.api.precheck:RebuildPrecheck.factory\n')
        return write_conf(self, text)

    def test_precheck_after_the_context_everywhere(self):
        good = ('authtoken keystonecontext image_traits_precheck %s '
                'osapi_compute_app_v21')
        paste = self._paste({'v21': good % '',
                             'legacy': good % 'legacy_v2_compatible'})
        rc, checks = run_status(self, self.conf(
            '[wsgi]\napi_paste_config = %s\n' % paste))
        pre = checks['nova-api pre-check']
        self.assertEqual(0, pre['result'], pre['details'])
        self.assertIn('matches the installed nova', pre['details'])

    def test_precheck_before_the_context_or_missing_warns(self):
        paste = self._paste({
            'v21': 'authtoken image_traits_precheck keystonecontext '
                   'osapi_compute_app_v21',
            'legacy': 'authtoken keystonecontext legacy_v2_compatible '
                      'osapi_compute_app_v21'})
        rc, checks = run_status(self, self.conf(
            '[wsgi]\napi_paste_config = %s\n' % paste))
        pre = checks['nova-api pre-check']
        self.assertEqual(1, pre['result'], pre['details'])
        self.assertIn('composite:v21 keystone has image_traits_precheck '
                      'before keystonecontext', pre['details'])
        self.assertIn('composite:legacy keystone has no '
                      'image_traits_precheck', pre['details'])

    def test_precheck_on_an_unsupported_nova_fails(self):
        from nova_image_traits.api import compat
        self.useFixture(fixtures.MockPatchObject(
            compat, 'verify', side_effect=compat.PrecheckInstallError(
                version='99.0.0', why='API.rebuild changed')))
        paste = self._paste({'v21': 'keystonecontext image_traits_precheck '
                                    'osapi_compute_app_v21'})
        rc, checks = run_status(self, self.conf(
            '[wsgi]\napi_paste_config = %s\n' % paste))
        pre = checks['nova-api pre-check']
        self.assertEqual(2, pre['result'], pre['details'])
        self.assertIn('API.rebuild changed', pre['details'])
        self.assertIn('precheck_on_unsupported_nova = run_without_precheck',
                      pre['details'])

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


class StatusDerivationTest(testtools.TestCase):
    """One derivation through the installed nova's code, as a decision's.

    A nova whose internals changed is caught here, before decisions fall
    back to the image's ``trait:`` properties alone.
    """

    def setUp(self):
        super().setUp()
        import nova.conf
        from nova.scheduler import request_filter
        self.scheduler = nova.conf.CONF.scheduler
        self.request_filter = request_filter

    def check(self):
        before = (self.scheduler.image_metadata_prefilter,
                  self.scheduler.query_placement_for_image_type_support)
        result = derivation.check_derivation()
        # The prefilters were on for the try only.
        self.assertEqual(before, (
            self.scheduler.image_metadata_prefilter,
            self.scheduler.query_placement_for_image_type_support))
        return result

    def filters(self, replace):
        self.useFixture(fixtures.MockPatchObject(
            self.request_filter, 'ALL_REQUEST_FILTERS',
            [replace.get(f.__name__, f)
             for f in self.request_filter.ALL_REQUEST_FILTERS] +
            replace.get('', [])))

    def test_the_installed_nova_derives_as_expected(self):
        result = self.check()
        self.assertEqual(Code.SUCCESS, result.code, result.details)
        self.assertIn('as expected', result.details)

    def test_values_set_before_are_kept(self):
        # A test, or a tool embedding the check, that set the options
        # sees them as it set them.
        import nova.conf
        conf = self.useFixture(config_fixture.Config(nova.conf.CONF))
        conf.config(query_placement_for_image_type_support=True,
                    group='scheduler')
        result = self.check()
        self.assertEqual(Code.SUCCESS, result.code, result.details)
        self.assertTrue(self.scheduler.query_placement_for_image_type_support)

    def test_resource_request_failing_is_a_failure(self):
        from nova.scheduler import utils as scheduler_utils
        self.useFixture(fixtures.MockPatchObject(
            scheduler_utils.ResourceRequest, 'from_request_spec',
            side_effect=TypeError('a new argument')))
        result = self.check()
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('TypeError: a new argument', result.details)
        self.assertIn('trait: properties alone', result.details)

    def test_a_prefilter_that_changed_is_a_failure(self):
        def transform_image_metadata(ctxt, spec):
            return False
        self.filters({'transform_image_metadata': transform_image_metadata})
        result = self.check()
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('root:COMPUTE_STORAGE_BUS_SCSI from hw_disk_bus=scsi',
                      result.details)

    def test_an_unknown_request_filter_warns(self):
        def a_future_filter(ctxt, spec):
            return False
        self.filters({'': [a_future_filter]})
        result = self.check()
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn('a_future_filter', result.details)


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
        # Not the machine's own /etc/nova, if it has one.
        home = self.useFixture(unit_base.NovaConfSearch()).home
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


class _FakePlacement(http.server.BaseHTTPRequestHandler):
    """Placement's version document: all a starting conductor asks."""

    def do_GET(self):
        body = json.dumps({'versions': [{
            'id': 'v1.0', 'min_version': '1.0', 'max_version': '1.39',
            'status': 'CURRENT', 'links': []}]}).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class RealConductorProcessesTest(testtools.TestCase):
    """Real nova-conductor and nova-image-traits-conductor services.

    Both are started from their console scripts with a minimal nova.conf
    (SQLite databases, oslo.messaging's fake driver, a stand-in for
    placement's version document), so that oslo.service rewrites their
    titles as in a deployment; they are stopped by PID.
    """

    #: Seconds for both services to start their workers.
    START_TIMEOUT = 120

    def setUp(self):
        super().setUp()
        self.work = self.useFixture(fixtures.TempDir()).path
        server = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                 _FakePlacement)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        self.nova_conf = os.path.join(self.work, 'nova.conf')
        with open(self.nova_conf, 'w') as f:
            f.write(textwrap.dedent('''\
                [DEFAULT]
                transport_url = fake:/
                host = nit-status-test
                [database]
                connection = sqlite:///%(work)s/nova.db
                [api_database]
                connection = sqlite:///%(work)s/nova_api.db
                [conductor]
                workers = 2
                [placement]
                auth_type = none
                endpoint = http://127.0.0.1:%(port)d
                ''' % {'work': self.work, 'port': server.server_address[1]}))
        bin_dir = os.path.dirname(sys.executable)
        for database in ('api_db', 'db'):
            subprocess.run([os.path.join(bin_dir, 'nova-manage'),
                            '--config-file', self.nova_conf, database,
                            'sync'], check=True, capture_output=True,
                           timeout=120)
        self.services = {
            name: self.start(os.path.join(bin_dir, name))
            for name in (PLAIN, HOOKED)}

    def start(self, program):
        log = open(os.path.join(self.work, os.path.basename(program) +
                                '.log'), 'wb')
        self.addCleanup(log.close)
        proc = subprocess.Popen([program, '--config-file', self.nova_conf],
                                stdout=log, stderr=subprocess.STDOUT,
                                cwd=self.work)
        self.addCleanup(self.stop, proc)
        return proc

    @staticmethod
    def children(pid):
        """The PIDs whose parent is ``pid``, from /proc/<pid>/stat."""
        found = []
        for entry in os.listdir('/proc'):
            if not entry.isdigit():
                continue
            try:
                with open('/proc/%s/stat' % entry) as f:
                    stat = f.read()
            except OSError:
                continue
            # pid (comm) state ppid ...; comm may hold spaces.
            if int(stat.rsplit(')', 1)[1].split()[1]) == pid:
                found.append(int(entry))
        return found

    def stop(self, proc):
        try:
            workers = self.children(proc.pid)
        except OSError:
            workers = []
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for pid in workers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def wait_for_workers(self):
        deadline = time.monotonic() + self.START_TIMEOUT
        while True:
            workers = {}
            for name, proc in self.services.items():
                if proc.poll() is not None:
                    with open(os.path.join(self.work, name + '.log')) as f:
                        self.fail('%s exited (%s): %s' % (
                            name, proc.returncode, f.read()[-2000:]))
                workers[name] = self.children(proc.pid)
            if all(workers.values()):
                return workers
            if time.monotonic() > deadline:
                self.fail('the conductors started no worker: %s' % workers)
            time.sleep(0.5)

    def test_parents_and_workers_hooked_and_plain(self):
        workers = self.wait_for_workers()
        with open('/proc/%d/cmdline' % self.services[HOOKED].pid,
                  'rb') as f:
            title = f.read()
        # What a real service shows: on native threads (2026.2) one
        # string, rewritten by oslo.service; NOTE(series 2025.1, 2025.2,
        # 2026.1): under eventlet, the original command line.
        original = [os.path.basename(arg) for arg in title.split(b'\0')[:2]]
        self.assertTrue(title.startswith(
            HOOKED.encode() + b': master process [') or
            HOOKED.encode() in original, title)
        found = {c.pid: c.hooked for c in conductor.find(
            uids={os.getuid()})}
        for name, hooked in ((HOOKED, True), (PLAIN, False)):
            for pid in [self.services[name].pid] + workers[name]:
                self.assertEqual(hooked, found.get(pid), (name, pid, found))

        conf = write_conf(self, '[placement]\nauth_type = none\n'
                          'endpoint = http://127.0.0.1:9\n')
        rc, checks = run_status(self, conf, proc='/proc',
                                uids={os.getuid()})
        details = checks['Conductor rebuild hook']['details']
        self.assertEqual(1, checks['Conductor rebuild hook']['result'],
                         details)
        self.assertIn('run nova-conductor without the hook', details)
        self.assertIn(str(self.services[PLAIN].pid), details)
        self.assertIn(str(self.services[HOOKED].pid), details)
