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
"""The nova-image-traits application: help texts and global options."""

import io
import json
import os
import types

import fixtures

from nova_image_traits.cmd import cli
from tests.unit import base


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    rc = cli.main(list(argv), stdout=out, stderr=err)
    return rc, out.getvalue(), err.getvalue()


class HelpTest(base.TestCase):

    def test_help_has_no_raw_rst(self):
        names = [name for name, _ep in cli.NovaImageTraitsApp(
        ).command_manager]
        self.assertLessEqual({'simulate', 'check', 'audit', 'audit images'},
                             set(names))
        for command in [[]] + [[name] for name in names]:
            rc, out, err = run('help', *command)
            self.assertEqual(0, rc, (command, err))
            self.assertTrue(out.strip(), command)
            self.assertNotIn('``', out + err, command)


class OsCloudTest(base.TestCase):

    def setUp(self):
        super().setUp()
        home = self.useFixture(fixtures.TempDir()).path
        clouds = os.path.join(home, 'clouds.yaml')
        with open(clouds, 'w') as f:
            f.write('clouds:\n  known:\n    auth_type: none\n')
        for name in [n for n in os.environ if n.startswith('OS_')]:
            self.useFixture(fixtures.EnvironmentVariable(name))
        self.useFixture(fixtures.EnvironmentVariable('HOME', home))
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_CLIENT_CONFIG_FILE', clouds))

    def test_os_cloud_before_the_command_is_used(self):
        rc, out, err = run('--os-cloud', 'no-such-cloud', 'check', 'srv',
                           '--image', 'img')

        # Not an argument error: the cloud named first is looked up.
        self.assertEqual(1, rc, err)
        self.assertIn('no-such-cloud', err)
        self.assertNotIn('unrecognized arguments', err)


class _Compute:
    """``conn.compute``: one volume-backed server on host1."""

    def servers(self, details=True, all_projects=False, **query):
        return iter([types.SimpleNamespace(
            id='s1', name='from-volume', compute_host='host1',
            hypervisor_hostname='host1', image=types.SimpleNamespace(id=''),
            flavor=types.SimpleNamespace(
                name='small', original_name='small', vcpus=1, ram=512,
                disk=0, ephemeral=0, swap=0, extra_specs={}))])


class AuditSkipTest(base.TestCase):

    def test_volume_backed_server_is_skipped(self):
        conf = self.useFixture(fixtures.TempDir()).path + '/nova.conf'
        open(conf, 'w').close()
        conn = types.SimpleNamespace(compute=_Compute(),
                                     has_service=lambda name: True)
        out, err = io.StringIO(), io.StringIO()

        rc = cli.main(['audit', '--config-file', conf, '-f', 'json'],
                      connection=conn, stdout=out, stderr=err)

        self.assertEqual(0, rc, err.getvalue())
        rows = json.loads(out.getvalue())
        self.assertEqual(
            [('s1', 'skipped', 'boots from a volume: no image to check')],
            [(r['Server'], r['Outcome'], r['Reason']) for r in rows])
        self.assertIn('0 failed, 1 skipped', err.getvalue())
