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
import os

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
        self.assertIn('audit images', names)
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
