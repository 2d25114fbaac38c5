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
"""tools/lower_constraints.py, and the bounds against the oldest series."""

import importlib.util
import os
import re

import testtools

TOP = os.path.join(os.path.dirname(__file__), '..', '..')


def _load():
    spec = importlib.util.spec_from_file_location(
        'nit_lower_constraints',
        os.path.join(TOP, 'tools', 'lower_constraints.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pins(path):
    pins = {}
    with open(os.path.join(TOP, path)) as f:
        for line in f:
            line = line.split('#', 1)[0].strip()
            match = re.match(r'([A-Za-z0-9._-]+)===?([^;]+)$', line)
            if match:
                name = re.sub(r'[-_.]+', '-', match.group(1)).lower()
                pins.setdefault(name, match.group(2))
    return pins


def _version(text):
    return tuple(int(p) for p in re.findall(r'\d+', text)[:3])


class MergeTest(testtools.TestCase):

    def test_the_bounds_win_and_the_rest_is_kept(self):
        merged = _load().merge(
            ['# bounds\n', 'oslo.config==9.4.0\n', 'PyYAML==6.0.1\n'],
            ['oslo_config===9.7.2\n', 'pyyaml===6.0.2\n',
             'eventlet===0.39.0\n', 'alabaster===0.7.16;python_version'
             "=='3.9'\n"])
        self.assertEqual(
            ['# bounds', 'oslo.config==9.4.0', 'PyYAML==6.0.1',
             'eventlet===0.39.0', "alabaster===0.7.16;python_version=='3.9'"],
            merged)


class BoundsTest(testtools.TestCase):
    """No lower bound above the oldest series' upper-constraints pin."""

    def test_every_bound_fits_2025_1(self):
        upper = _pins('constraints/upper-constraints-2025.1.txt')
        for req in ('requirements.txt', 'test-requirements.txt'):
            with open(os.path.join(TOP, req)) as f:
                for line in f:
                    match = re.match(r'([A-Za-z0-9._-]+)>=([0-9.]+)', line)
                    if not match:
                        continue
                    name = re.sub(r'[-_.]+', '-', match.group(1)).lower()
                    if name in upper:
                        self.assertLessEqual(
                            _version(match.group(2)), _version(upper[name]),
                            '%s: %s' % (req, line.strip()))

    def test_lower_constraints_pin_every_bound(self):
        lower = _pins('lower-constraints.txt')
        with open(os.path.join(TOP, 'requirements.txt')) as f:
            for line in f:
                match = re.match(r'([A-Za-z0-9._-]+)>=([0-9.]+)', line)
                if match:
                    name = re.sub(r'[-_.]+', '-', match.group(1)).lower()
                    self.assertEqual(match.group(2), lower.get(name), name)
