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
"""How the commands find and read nova's configuration."""

import os

from nova_image_traits import cli
from tests.unit import base


class LoadConfTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.search = self.useFixture(base.NovaConfSearch())
        self.write = self.search.write

    def test_search_reads_nova_conf_and_its_conf_d(self):
        path = self.write('.nova/nova.conf',
                          '[image_traits]\nstrategy = root_traits\n')
        extra = self.write('.nova/nova.conf.d/10-traits.conf',
                           '[image_traits]\nfallback_strategy = reject\n')

        conf = cli.load_conf(search=True)

        self.assertEqual('root_traits', conf.image_traits.strategy)
        self.assertEqual('reject', conf.image_traits.fallback_strategy)
        line = cli.describe_conf(conf)
        self.assertIn(path, line)
        self.assertIn(os.path.dirname(extra), line)
        self.assertIn('strategy root_traits, fallback reject', line)

    def test_search_reads_etc_nova(self):
        # Where nova's services read it; the search sees the fixture's
        # /etc, never the machine's.
        etc = self.search.etc
        path = self.write('nova/nova.conf',
                          '[image_traits]\nstrategy = tree_traits\n', etc)
        conf_d = os.path.dirname(self.write(
            'nova/nova.conf.d/10-traits.conf',
            '[image_traits]\nfallback_strategy = reject\n', etc))

        conf = cli.load_conf(search=True)

        self.assertEqual({path, conf_d}, set(conf.nit_sources))
        self.assertEqual('tree_traits', conf.image_traits.strategy)
        self.assertEqual('reject', conf.image_traits.fallback_strategy)

    def test_explicit_files_replace_the_search(self):
        self.write('.nova/nova.conf',
                   '[image_traits]\nstrategy = root_traits\n')
        other = self.write('other.conf',
                           '[image_traits]\nstrategy = tree_traits\n')
        conf = cli.load_conf([other], search=True)
        self.assertEqual('tree_traits', conf.image_traits.strategy)
        self.assertEqual([other], conf.nit_sources)

    def test_no_search_means_defaults(self):
        self.write('.nova/nova.conf',
                   '[image_traits]\nstrategy = root_traits\n')
        conf = cli.load_conf()
        self.assertEqual('held_providers', conf.image_traits.strategy)
        self.assertIn('none found (defaults)', cli.describe_conf(conf))

    def test_invalid_value_is_one_plain_line(self):
        path = self.write('bad.conf', '[image_traits]\nstrategy = roots\n')
        e = self.assertRaises(cli.UsageError, cli.load_conf, [path])
        self.assertNotIn('LocationInfo', str(e))
        self.assertIn('strategy', str(e))
        self.assertIn(path, str(e))
        self.assertIn("'roots'", str(e))
