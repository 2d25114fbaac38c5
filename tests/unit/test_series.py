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
"""The support matrix, and the status check of the nova beside us."""

import importlib.metadata
import os
import re
from unittest import mock

from oslo_upgradecheck import upgradecheck

from nova_image_traits import series
from nova_image_traits.status import series as series_check
from tests.unit import base

Code = upgradecheck.Code
TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


class SeriesTest(base.TestCase):

    def test_every_maintained_series_is_supported(self):
        self.assertEqual(
            [('2025.1', 31, 13), ('2025.2', 32, 14), ('2026.1', 33, 15),
             ('2026.2', 34, 16)], [tuple(s) for s in series.SUPPORTED])

    def test_of_nova(self):
        self.assertEqual('2025.1', series.of_nova('31.3.1').name)
        self.assertEqual('2026.2', series.of_nova('34.0.0').name)
        self.assertEqual('2026.1', series.of_nova('33.0.3.dev4').name)
        for version in ('30.2.0', '35.0.0', 'unknown', '', None):
            self.assertIsNone(series.of_nova(version), version)

    def test_describe_names_the_series(self):
        self.assertEqual('31.3.1 (2025.1)', series.describe('31.3.1'))
        self.assertEqual('35.0.0', series.describe('35.0.0'))

    def test_supported_names_every_series(self):
        self.assertEqual('nova 31 to 34 (2025.1, 2025.2, 2026.1, 2026.2)',
                         series.supported())

    def test_installed_nova_reads_metadata_only(self):
        with mock.patch.object(importlib.metadata, 'version',
                               return_value='32.2.1') as version:
            self.assertEqual('32.2.1', series.installed_nova())
        version.assert_called_once_with('nova')
        with mock.patch.object(
                importlib.metadata, 'version',
                side_effect=importlib.metadata.PackageNotFoundError('nova')):
            self.assertIsNone(series.installed_nova())

    def test_every_series_has_a_test_environment(self):
        with open(os.path.join(TOP, 'tox.ini')) as f:
            tox_ini = f.read()
        for s in series.SUPPORTED:
            self.assertRegex(tox_ini, r'\[testenv:functional\{[^]]*-%s[,}]'
                             % re.escape(s.name))
            self.assertIn('nova>=%d.0.0,<%d' % (s.nova, s.nova + 1), tox_ini)
            self.assertIn('openstack-placement>=%d.0.0,<%d.1'
                          % (s.placement, s.placement), tox_ini)
            self.assertTrue(os.path.exists(os.path.join(
                TOP, 'constraints', 'upper-constraints-%s.txt' % s.name)))

    def test_the_matrix_in_the_docs_names_every_series(self):
        with open(os.path.join(TOP, 'doc', 'source', 'install',
                               'index.rst')) as f:
            install = f.read()
        with open(os.path.join(TOP, 'README.rst')) as f:
            readme = f.read()
        for s in series.SUPPORTED:
            # A table row: the series, then its nova (rst list-table or
            # simple table).
            row = re.compile(r'\b%s\s+(-\s+)?%d\.'
                             % (re.escape(s.name), s.nova))
            self.assertRegex(install, row)
            self.assertRegex(readme, row)


class NovaCheckTest(base.TestCase):

    def test_supported_nova(self):
        result = series_check.check_nova('31.3.1')
        self.assertEqual(Code.SUCCESS, result.code)
        self.assertIn('nova 31.3.1, series 2025.1, placement 13',
                      result.details)

    def test_nova_outside_the_matrix_warns(self):
        for version in ('30.2.0', '35.0.0'):
            result = series_check.check_nova(version)
            self.assertEqual(Code.WARNING, result.code, version)
            self.assertIn('nova %s is outside the support matrix' % version,
                          result.details)
            self.assertIn('2025.1, 2025.2, 2026.1, 2026.2', result.details)

    def test_no_nova_here(self):
        result = series_check.check_nova(None)
        self.assertEqual(Code.SUCCESS, result.code)
        self.assertIn('nova is not installed', result.details)
