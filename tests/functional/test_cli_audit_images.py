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
"""``audit images`` and the status image check on real nova and placement.

The same stand-ins as :mod:`tests.functional.test_cli_check_audit`: real
nova services and placement in this process, and nova's ``GlanceFixture``
for Glance, read through nova's image proxy API because the catalog has no
image service.
"""

import fixtures

import nova.conf

from tests.functional import test_cli_check_audit as cli_test
from tests.functional import test_cli_status as status_test

CONF = nova.conf.CONF
AVX2, GOLD = cli_test.AVX2, cli_test.GOLD
SILVER = 'CUSTOM_SILVER'
NOPE = 'CUSTOM_NOPE'


class AuditImagesTest(cli_test.CLITestBase):

    def setUp(self):
        super().setUp()
        self.set_traits(self.root1, [AVX2, GOLD])
        self.set_traits(self.root2, [AVX2])
        self.set_traits(self.child1, [SILVER])
        self.avx2 = self.create_image(required=[AVX2], name='avx2')
        self.gold = self.create_image(required=[GOLD], name='gold')
        self.both = self.create_image(required=[AVX2, GOLD], name='both')
        self.silver = self.create_image(required=[SILVER], name='silver')
        del self.sent[:]

    def test_audit_images_counts_hosts_with_one_request_per_image(self):
        nope = self.create_image(required=[NOPE], name='nope')
        bad = self.create_image(name='bad')
        self.glance.update(None, bad, {'properties': {
            'trait:lower_case': 'required'}})

        # NOTE: nova's fake images with hw_ephemeral_encryption would be
        # listed too for what nova derives from them (see
        # test_cli_derived.AuditImagesDerivedTest).
        rc, rows, err = self.cli_json('audit', 'images', '--config-file',
                                      self._derived_off())

        self.assertEqual(1, rc, err)
        by = {r['Name']: r for r in rows}
        self.assertEqual(
            {'avx2': (2, 'yes'), 'gold': (1, 'yes'), 'both': (1, 'yes'),
             'silver': (0, 'no'), 'nope': (0, 'no'), 'bad': (0, 'no')},
            {n: (r['Hosts'], r['Bootable']) for n, r in by.items()})
        self.assertEqual(NOPE, by['nope']['Unknown'])
        self.assertEqual('trait:lower_case', by['bad']['Invalid'])
        self.assertEqual('%s, %s' % (GOLD, AVX2), by['both']['Required'])
        self.assertEqual(nope, by['nope']['ID'])
        # One trait listing for all images, then one provider query per
        # image whose traits are valid and known: avx2, gold, both, silver.
        self.assertEqual(1 + 4, self.placement_gets())
        self.assertEqual(1, len([u for _m, u in self.sent
                                 if u.startswith('/traits?')]))
        self.assertIn('6 images, 3 not bootable, 0 of them only because of '
                      'derived requirements; 2 compute nodes; 5 placement '
                      'requests', err)
        self.assertEqual({'off'}, {r['Derived'] for r in rows})

    def _derived_off(self):
        path = self.useFixture(fixtures.TempDir()).join('off.conf')
        with open(path, 'w') as f:
            f.write('[image_traits]\njudge_derived_requirements = false\n')
        return path

    def test_audit_named_images_only(self):
        rc, rows, err = self.cli_json('audit', 'images', 'avx2', self.gold)

        self.assertEqual(0, rc, err)
        self.assertEqual({('avx2', 2), ('gold', 1)},
                         {(r['Name'], r['Hosts']) for r in rows})
        self.assertEqual(1 + 2, self.placement_gets())

    def test_audit_unknown_image_is_an_error(self):
        rc, out, err = self.cli('audit', 'images', 'no-such-image')
        self.assertEqual(2, rc)
        self.assertIn('no image with name or ID no-such-image', err)
        self.assertNotIn('Traceback', err)

    def _status(self):
        path = status_test.write_conf(self, status_test.placement_conf(
            self.placement_url, CONF.placement.token) +
            '[filter_scheduler]\navailable_filters = '
            'nova.scheduler.filters.all_filters\navailable_filters = '
            'nova_image_traits.filters.image_traits_filter.'
            'ImageTraitsFilter\nenabled_filters = ComputeFilter,'
            'ImageTraitsFilter\n')
        proc = self.useFixture(fixtures.TempDir()).path
        return status_test.run_status(self, path, connection=self.conn,
                                      proc=proc)

    def test_status_passes_when_placement_knows_every_image_trait(self):
        rc, checks = self._status()

        self.assertEqual(0, rc, checks)
        result = checks['Image traits known to placement']
        self.assertIn('4 active images require 3 distinct traits',
                      result['details'])
        self.assertIn('matches the installed nova',
                      checks['Conductor rebuild hook']['details'])

    def test_status_warns_about_images_requiring_unknown_traits(self):
        nope = self.create_image(required=[NOPE], name='nope')

        rc, checks = self._status()

        self.assertEqual(1, rc, checks)
        result = checks['Image traits known to placement']
        self.assertEqual(1, result['result'])
        self.assertIn('placement knows no trait %s' % NOPE,
                      result['details'])
        self.assertIn('nope (%s)' % nope, result['details'])
