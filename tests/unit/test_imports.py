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
"""The engine imports and runs without nova installed."""

import json
import os
import subprocess
import sys

import nova_image_traits
from tests.unit import base

#: Modules that exist to plug into nova and may import it.
INTEGRATION = ('nova_image_traits.filters', 'nova_image_traits.conductor',
               'nova_image_traits.nova_request', 'nova_image_traits.api',
               'nova_image_traits.cmd.conductor')

_PROBE = r'''
import importlib
import json
import sys

sys.modules['nova'] = None  # any "import nova..." now fails
result = {'failed': {}, 'nova': []}
for name in json.loads(sys.argv[1]):
    try:
        importlib.import_module(name)
    except Exception as e:
        result['failed'][name] = '%s: %s' % (type(e).__name__, e)
result['nova'] = sorted(m for m, v in sys.modules.items()
                        if (m == 'nova' or m.startswith('nova.')) and
                        v is not None)
print(json.dumps(result))
'''


def _is_integration(name):
    return any(name == m or name.startswith(m + '.') for m in INTEGRATION)


def _modules():
    """Every module of the package, found on disk without importing it."""
    top = os.path.dirname(nova_image_traits.__file__)
    found = []
    for root, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if os.path.isfile(
            os.path.join(root, d, '__init__.py')))
        rel = os.path.relpath(root, os.path.dirname(top))
        package = rel.replace(os.sep, '.')
        for name in sorted(files):
            if not name.endswith('.py'):
                continue
            module = name[:-3]
            found.append(package if module == '__init__'
                         else package + '.' + module)
    return found


class NoNovaImportTest(base.TestCase):

    def _probe(self, names):
        out = subprocess.run(
            [sys.executable, '-c', _PROBE, json.dumps(names)],
            capture_output=True, text=True, timeout=120, check=True,
            env=dict(os.environ, PYTHONDONTWRITEBYTECODE='1'))
        return json.loads(out.stdout.strip().splitlines()[-1])

    def test_every_non_integration_module_imports_without_nova(self):
        names = [n for n in _modules() if not _is_integration(n)]
        for expected in ('nova_image_traits.engine',
                         'nova_image_traits.placement',
                         'nova_image_traits.traits',
                         'nova_image_traits.flavor',
                         'nova_image_traits.conf.image_traits',
                         'nova_image_traits.strategies.in_tree_candidates'):
            self.assertIn(expected, names)
        # The guard works: the integration modules need nova.
        integration = [n for n in _modules() if _is_integration(n) and
                       n.rsplit('.', 1)[-1] != '__init__' and
                       not n.endswith(('.filters', '.conductor', '.api'))]
        self.assertIn('nova_image_traits.nova_request', integration)
        result = self._probe(names + integration)
        for name in integration:
            self.assertIn(name, result['failed'])
            del result['failed'][name]
        # The in-process placement needs the [simulate] extra
        # (openstack-placement), never nova.
        for name, error in list(result['failed'].items()):
            if (name.startswith('nova_image_traits.simulate.') and
                    error.startswith('ModuleNotFoundError') and
                    "'nova" not in error):
                del result['failed'][name]
        self.assertEqual({}, result['failed'])
        self.assertEqual([], result['nova'])

    def test_unit_tests_do_not_load_nova_or_placement(self):
        loaded = [m for m in sys.modules
                  if m.split('.')[0] in ('nova', 'placement')]
        self.assertEqual([], loaded)
