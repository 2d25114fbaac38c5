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
"""``nova-image-traits simulate``, run in this process as a user runs it.

Each run starts a real placement (``openstack-placement`` on SQLite, on
loopback), loads a scenario into it over HTTP and judges every case with
every strategy. Nothing is mocked.
"""

import io
import json
import os
import tempfile
import textwrap

import pydot
import testtools

from nova_image_traits.cli import simulate
from nova_image_traits.cmd import cli

A, R = 'accept', 'reject'
STRATEGIES = ('reject', 'root_traits', 'tree_traits', 'in_tree_candidates',
              'allocation_traits')
#: The bundled sample cloud: each case's outcome per strategy, in the
#: order of STRATEGIES. This is the table deployers choose from.
SAMPLE_MATRIX = {
    'root-trait': (R, A, A, A, A),
    'same-traits': (A, A, A, A, A),
    'nowhere': (R, R, R, R, R),
    'forbidden-by-flavor': (R, R, R, R, R),
    'invalid-name': (R, R, R, R, R),
    'allocated-vgpu': (R, R, A, R, A),
    'unallocated-gpu': (R, R, A, R, R),
    'allocated-nic': (A, R, A, R, A),
    'allocated-numa': (R, R, A, A, A),
    'other-numa': (R, R, A, A, R),
    'sharing-provider': (R, R, R, R, A),
    'shared-disk-root-trait': (R, A, A, A, A),
    'full-host-root-trait': (R, A, A, A, A),
    'full-host-nowhere': (R, R, R, R, R),
}
#: Cases where in_tree_candidates cannot tell and root_traits decides:
#: a full host, and a host whose disk comes from a sharing provider
#: (placement leaves sharing providers out of in_tree queries).
FALLBACK_CASES = {'sharing-provider', 'shared-disk-root-trait',
                  'full-host-root-trait', 'full-host-nowhere'}

SMALL = """\
hosts:
  - name: cn1
    traits: [HW_CPU_X86_AVX2]
    children:
      - name: cn1-gpu
        inventory: {VGPU: 2}
        traits: [CUSTOM_GPU]
flavors:
  - name: tiny
images:
  - name: plain
  - name: gpu
    properties: {trait:CUSTOM_GPU: required}
servers:
  - name: vm
    host: cn1
    flavor: tiny
    image: plain
cases:
  - name: gpu-child
    server: vm
    image: gpu
"""


def run(*argv):
    """Run the command; return (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    rc = cli.main(list(argv), stdout=out, stderr=err)
    return rc, out.getvalue(), err.getvalue()


class SimulateTest(testtools.TestCase):

    def write(self, text):
        fd, path = tempfile.mkstemp(suffix='.yaml')
        with os.fdopen(fd, 'w') as f:
            f.write(textwrap.dedent(text))
        self.addCleanup(os.unlink, path)
        return path

    def test_bundled_cloud_matrix(self):
        rc, out, err = run('simulate', '-f', 'json')

        self.assertEqual(0, rc, err)
        rows = json.loads(out)
        self.assertEqual(len(SAMPLE_MATRIX) * len(STRATEGIES), len(rows))
        seen = {}
        for row in rows:
            seen.setdefault(row['Case'], {})[row['Strategy']] = row
        self.assertEqual(
            SAMPLE_MATRIX,
            {case: tuple(by[s]['Outcome'] for s in STRATEGIES)
             for case, by in seen.items()})
        for case, by in seen.items():
            for name, row in by.items():
                self.assertEqual(row['Outcome'] == A, row['Allowed'])
                self.assertTrue(row['Reason'])
                falls_back = (name == 'in_tree_candidates' and
                              case in FALLBACK_CASES)
                self.assertEqual('root_traits' if falls_back else '-',
                                 row['Fallback'], (case, name))

        # The nova-facts disagreement: a trait on the child the server is
        # allocated on passes for tree and allocation, not for root or a
        # boot-like query (the trait is outside the unsuffixed group).
        vgpu = seen['allocated-vgpu']
        self.assertEqual('child pgpu0 (allocated)',
                         vgpu['root_traits']['Traits At'])
        self.assertEqual('HW_GPU_API_VULKAN',
                         vgpu['root_traits']['Missing'])
        self.assertEqual('-', vgpu['tree_traits']['Missing'])
        self.assertEqual('cmp-gpu-1', vgpu['tree_traits']['Host'])
        self.assertEqual(0, vgpu['reject']['Requests'])
        self.assertGreater(vgpu['allocation_traits']['Requests'], 1)
        self.assertEqual('sharing ceph-pool (allocated)',
                         seen['sharing-provider']['reject']['Traits At'])
        self.assertEqual('invalid name',
                         seen['invalid-name']['reject']['Traits At'])
        self.assertIn('upper case',
                      seen['invalid-name']['tree_traits']['Reason'])
        self.assertIn('forbids',
                      seen['forbidden-by-flavor']['root_traits']['Reason'])

    def test_dot_marks_satisfying_and_missing_traits(self):
        rc, out, err = run('simulate', '--case', 'allocated-vgpu',
                           '--case', 'nowhere', '-f', 'dot')

        self.assertEqual(0, rc, err)
        graphs = pydot.graph_from_dot_data(out)
        self.assertEqual(1, len(graphs))
        graph = graphs[0]
        self.assertEqual('digraph', graph.get_type())
        clusters = graph.get_subgraphs()
        self.assertEqual(2, len(clusters))
        # In the scenario's order.
        nowhere, vgpu = clusters
        self.assertIn('allocated-vgpu', vgpu.get_label())
        self.assertIn('nowhere', nowhere.get_label())
        labels = {n.get_name(): n.get_label() or '' for n in
                  vgpu.get_nodes()}
        green = [n for n in vgpu.get_nodes() if n.get('color')]
        self.assertEqual(1, len(green))
        self.assertIn('cmp-gpu-1-pgpu0', green[0].get_label())
        self.assertIn('HW_GPU_API_VULKAN</b></font>', green[0].get_label())
        self.assertEqual(3, len(labels))
        self.assertEqual(2, len(vgpu.get_edges()))
        self.assertIn('tree_traits: accept', vgpu.get_label())
        # The trait exists nowhere on cmp-plain-1: a red note names it.
        notes = [n for n in nowhere.get_nodes()
                 if n.get('shape') == 'note']
        self.assertEqual(1, len(notes))
        self.assertIn('#cf222e', notes[0].get('color'))
        self.assertIn('HW_CPU_X86_AVX512F: on no provider',
                      notes[0].get_label())

    def test_custom_scenario_and_strategy_selection(self):
        path = self.write(SMALL)

        rc, out, err = run('simulate', '--scenario', path, '--strategy',
                           'tree_traits', '--strategy', 'root_traits',
                           '-f', 'json', '-c', 'Case', '-c', 'Strategy',
                           '-c', 'Outcome', '-c', 'Traits At')

        self.assertEqual(0, rc, err)
        self.assertEqual(
            [{'Case': 'gpu-child', 'Strategy': 'tree_traits',
              'Outcome': A, 'Traits At': 'child gpu'},
             {'Case': 'gpu-child', 'Strategy': 'root_traits',
              'Outcome': R, 'Traits At': 'child gpu'}],
            json.loads(out))

    def test_default_scenario_is_the_bundled_one(self):
        path = simulate.default_scenario_path()
        self.assertTrue(path.endswith(os.path.join(
            'nova_image_traits', 'simulate', 'sample-cloud.yaml')))
        self.assertTrue(os.path.exists(path))

    def _assert_broken(self, text, line, field, words):
        path = self.write(text)
        rc, out, err = run('simulate', '--scenario', path)
        self.assertEqual(2, rc, err)
        self.assertEqual('', out)
        self.assertNotIn('Traceback', err)
        self.assertEqual(1, len(err.splitlines()), err)
        where = '%s:%d: ' % (path, line)
        self.assertIn(where + (field + ': ' if field else ''), err)
        self.assertIn(words, err)

    def test_broken_scenarios_exit_2_with_line_and_field(self):
        self._assert_broken(SMALL.replace('    traits: [HW_CPU',
                                          '    trait: [HW_CPU'),
                            3, 'hosts[0].trait', "did you mean 'traits'")
        self._assert_broken(SMALL.replace('inventory: {VGPU: 2}',
                                          'inventory: {VGPU: two}'),
                            6, 'hosts[0].children[0].inventory.VGPU',
                            'expected an integer >= 1')
        self._assert_broken(SMALL.replace('    host: cn1', '    host: cn2'),
                            16, 'servers[0].host', "unknown host 'cn2'")
        self._assert_broken(SMALL.replace('  - name: tiny',
                                          '  - name: tiny\n   vcpus: 1'),
                            10, None, 'invalid YAML')
        self._assert_broken('hosts: [\n', 2, None, 'invalid YAML')

    def test_unknown_case_is_a_usage_error(self):
        rc, out, err = run('simulate', '--case', 'no-such-case')
        self.assertEqual(2, rc)
        self.assertIn('unknown case(s) no-such-case', err)
