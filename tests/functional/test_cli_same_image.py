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
"""``audit images --same-image-rebuilds`` on real nova and placement.

nova's clock is frozen and moved by hand (oslo's ``TimeFixture``), so that
the servers are created, the image updated and a server rebuilt in a known
order; nothing waits on it.
"""

import datetime

from oslo_utils import fixture as utils_fixture
from oslo_utils import timeutils

from tests.functional import test_cli_check_audit as cli_test

AVX2, GOLD = cli_test.AVX2, cli_test.GOLD
#: Less than nova's service_down_time: the services stay up.
STEP = datetime.timedelta(seconds=20)


class SameImagePreviewTest(cli_test.CLITestBase):

    def setUp(self):
        super().setUp()
        self.set_traits(self.root1, [AVX2, GOLD])
        self.set_traits(self.root2, [AVX2])
        self.t0 = timeutils.utcnow().replace(microsecond=0)
        self.clock = self.useFixture(utils_fixture.TimeFixture(self.t0))
        self.image = self.create_image(name='plain')
        self.stale = self.create_image(name='stale')
        self.on1 = self.boot(self.small, self.image, host='host1')
        self.on2 = self.boot(self.small, self.image, host='host2')
        self.rebuilt = self.boot(self.small, self.image, host='host2')
        self.old = self.boot(self.small, self.stale, host='host2')
        # Later, the image gains a trait host2 lacks.
        self.clock.advance_time_delta(STEP)
        self.glance.update(None, self.image, {
            'properties': {'trait:%s' % GOLD: 'required'},
            'updated_at': self.t0 + STEP})
        # The stale image gains it too, with the fixture's 2011 date: as
        # far as the APIs tell, it did not change since the servers
        # recorded it.
        self.glance.update(None, self.stale, {
            'properties': {'trait:%s' % GOLD: 'required'}})
        # Later still, one server records the new properties.
        self.clock.advance_time_delta(STEP)
        self.rebuild(self.rebuilt, self.image)
        del self.sent[:]

    def test_lists_the_servers_the_precheck_would_refuse(self):
        rc, rows, err = self.cli_json('audit', 'images',
                                      '--same-image-rebuilds')

        self.assertEqual(1, rc, err)
        self.assertEqual(
            [(self.on2['id'], 'host2', self.image, 'held_providers',
              'reject', GOLD)],
            [(r['Server'], r['Host'], r['Image'], r['Strategy'],
              r['Outcome'], r['Missing']) for r in rows])
        self.assertEqual(self.t0.isoformat(), rows[0]['Recorded'])
        # on1's host has the trait; rebuilt recorded the new properties;
        # old's image was not updated since it booted.
        # nova's fake images that ask for something are listed too.
        self.assertRegex(err, r'4 servers run the \d+ images; 2 with an '
                         'image updated since they recorded it; 1 would be '
                         'refused, 0 could not be judged')

    def test_named_image_and_nothing_to_refuse(self):
        self.set_traits(self.root2, [AVX2, GOLD])

        rc, rows, err = self.cli_json('audit', 'images', self.image,
                                      '--same-image-rebuilds')

        self.assertEqual(0, rc, err)
        self.assertEqual([], rows)
        self.assertIn('3 servers run the 1 images; 2 with an image updated '
                      'since they recorded it; 0 would be refused', err)
