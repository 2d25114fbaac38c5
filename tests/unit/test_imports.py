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
"""The engine imports without nova, and the decision path without the
simulator."""

import ast
import json
import os
import subprocess
import sys

import nova_image_traits
from tests.unit import base

#: Modules that exist to plug into nova and may import it.
INTEGRATION = ('nova_image_traits.filters', 'nova_image_traits.conductor',
               'nova_image_traits.nova_request', 'nova_image_traits.api',
               'nova_image_traits.boot_requirements',
               'nova_image_traits.attribution',
               'nova_image_traits.boot_query',
               'nova_image_traits.cmd.conductor')

#: What runs inside nova, or beside it to deploy it: never the simulator.
DECISION_PATH = ('nova_image_traits.engine', 'nova_image_traits.decision',
                 'nova_image_traits.strategies', 'nova_image_traits.placement',
                 'nova_image_traits.filters', 'nova_image_traits.conductor',
                 'nova_image_traits.api', 'nova_image_traits.nova_request',
                 'nova_image_traits.boot_requirements',
                 'nova_image_traits.attribution',
                 'nova_image_traits.boot_query',
                 'nova_image_traits.requirements',
                 'nova_image_traits.request', 'nova_image_traits.reasons',
                 'nova_image_traits.listing',
                 'nova_image_traits.cmd.conductor',
                 'nova_image_traits.cmd.status', 'nova_image_traits.conf')
SIMULATOR = 'nova_image_traits.simulate'

_PROBE = r'''
import importlib
import json
import sys

for blocked in json.loads(sys.argv[2]):
    sys.modules[blocked] = None  # any "import <blocked>..." now fails
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


def _probe(names, blocked=('nova',)):
    out = subprocess.run(
        [sys.executable, '-c', _PROBE, json.dumps(names),
         json.dumps(blocked)],
        capture_output=True, text=True, timeout=120, check=True,
        env=dict(os.environ, PYTHONDONTWRITEBYTECODE='1'))
    return json.loads(out.stdout.strip().splitlines()[-1])


class NoNovaImportTest(base.TestCase):

    def test_every_non_integration_module_imports_without_nova(self):
        names = [n for n in _modules() if not _is_integration(n)]
        for expected in ('nova_image_traits.engine',
                         'nova_image_traits.reasons',
                         'nova_image_traits.reasons.wording',
                         'nova_image_traits.listing',
                         'nova_image_traits.request',
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
        result = _probe(names + integration)
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


def _imports(module):
    """The package's modules that ``module`` imports, anywhere in it."""
    known = set(_modules())
    return {m for m in _every_import(module) if m in known}


def _every_import(module):
    """Every module name ``module`` imports, anywhere in it."""
    top = os.path.dirname(os.path.dirname(nova_image_traits.__file__))
    path = os.path.join(top, *module.split('.'))
    path = (os.path.join(path, '__init__.py') if os.path.isdir(path)
            else path + '.py')
    with open(path) as f:
        tree = ast.parse(f.read())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update('%s.%s' % (node.module, a.name) for a in node.names)
        elif (isinstance(node, ast.Call) and node.args and
              isinstance(node.args[0], ast.Constant) and
              isinstance(node.args[0].value, str) and
              node.args[0].value.startswith('nova_image_traits')):
            # NOTE(founders): importlib.import_module('a.b.' + name)
            found.add(node.args[0].value.rstrip('.'))
    return found


class NoNovaImportAnywhereTest(base.TestCase):
    """No module but the integration imports nova, even inside a function."""

    #: Inside the one function that needs nova, and only when it is
    #: installed: the command that derives with nova's own code
    #: (``CommandLineTest``), and the status checks that verify the
    #: conductor hook, the nova-api pre-check (and the names its scheduler
    #: filters use) and the derivation against the installed nova.
    USES_NOVA_WHEN_THERE = ('nova_image_traits.cli.derive',
                            'nova_image_traits.cmd.status',
                            'nova_image_traits.status.api',
                            'nova_image_traits.status.derivation',
                            'nova_image_traits.status.filters')

    def _reaching(self, name):
        return sorted(m for m in _every_import(name)
                      if m == 'nova' or m.startswith('nova.') or
                      _is_integration(m))

    def test_only_integration_modules_import_nova_or_integration(self):
        found = {}
        for name in _modules():
            if _is_integration(name) or name in self.USES_NOVA_WHEN_THERE:
                continue
            reaching = self._reaching(name)
            if reaching:
                found[name] = reaching
        self.assertEqual({}, found)

    def test_the_check_sees_imports_inside_functions(self):
        self.assertIn('nova.conf',
                      self._reaching('nova_image_traits.nova_request'))
        for name in self.USES_NOVA_WHEN_THERE:
            self.assertTrue(self._reaching(name), name)


class CommandLineTest(base.TestCase):
    """The commands run without nova; one module uses it when it is there."""

    def test_only_cli_derive_reaches_nova(self):
        nova_modules = {'nova_image_traits.boot_requirements',
                        'nova_image_traits.attribution',
                        'nova_image_traits.boot_query',
                        'nova_image_traits.nova_request'}
        reaching = {}
        for name in _modules():
            if not name.startswith('nova_image_traits.cli'):
                continue
            top = os.path.dirname(os.path.dirname(nova_image_traits.__file__))
            path = os.path.join(top, *name.split('.'))
            path = (os.path.join(path, '__init__.py') if os.path.isdir(path)
                    else path + '.py')
            with open(path) as f:
                tree = ast.parse(f.read())
            found = {a.name for node in ast.walk(tree)
                     if isinstance(node, ast.Import) for a in node.names}
            found |= {node.module for node in ast.walk(tree)
                      if isinstance(node, ast.ImportFrom) and node.module}
            found |= _imports(name) & nova_modules
            if any(m == 'nova' or m.startswith('nova.') or m in nova_modules
                   for m in found):
                reaching[name] = sorted(found)
        self.assertEqual(['nova_image_traits.cli.derive'], sorted(reaching))


class DecisionPathTest(base.TestCase):
    """The simulator can be left out of an install (issue 14)."""

    def _closure(self, roots):
        seen, todo = {}, [(m, m) for m in roots]
        while todo:
            module, via = todo.pop()
            if module in seen:
                continue
            seen[module] = via
            parts = module.split('.')
            parents = ['.'.join(parts[:i]) for i in range(1, len(parts))]
            todo.extend((m, module) for m in _imports(module) | set(parents)
                        if m not in seen)
        return seen

    def test_decision_path_never_imports_the_simulator(self):
        roots = [n for n in _modules()
                 if any(n == m or n.startswith(m + '.')
                        for m in DECISION_PATH)]
        self.assertIn('nova_image_traits.conductor.hook', roots)
        self.assertIn('nova_image_traits.filters.image_traits_filter', roots)
        reached = self._closure(roots)
        self.assertIn('nova_image_traits.placement.query', reached)
        self.assertEqual(
            {}, {m: via for m, via in reached.items()
                 if m == SIMULATOR or m.startswith(SIMULATOR + '.')})

    def test_the_closure_sees_the_simulate_command(self):
        # The guard works: the command does reach the simulator.
        reached = self._closure(['nova_image_traits.cli.simulate'])
        self.assertIn(SIMULATOR, reached)

    def test_decision_path_imports_with_the_simulator_blocked(self):
        names = [n for n in _modules() if not _is_integration(n) and any(
            n == m or n.startswith(m + '.') for m in DECISION_PATH)]
        names += ['nova_image_traits.cmd.cli', 'nova_image_traits.cli']
        self.assertIn('nova_image_traits.engine', names)
        result = _probe(names, blocked=('nova', SIMULATOR))
        self.assertEqual({}, result['failed'])
