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

import csv
import importlib.metadata
import io
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from unittest import mock

import pydot
import testtools

from nova_image_traits.cli import derive
from nova_image_traits.cli import simulate
from nova_image_traits.cmd import cli
from nova_image_traits.simulate import scenario

A, R = 'accept', 'reject'
STRATEGIES = ('held_providers', 'reject', 'root_traits', 'tree_traits',
              'in_tree_candidates', 'allocation_traits')
SAMPLE_MATRIX = {
    'root-trait': (A, R, A, A, A, A),
    'same-traits': (A, A, A, A, A, A),
    'nowhere': (R, R, R, R, R, R),
    'forbidden-by-flavor': (R, R, R, R, R, R),
    'invalid-name': (R, R, R, R, R, R),
    'allocated-vgpu': (R, R, R, A, R, A),
    'unallocated-gpu': (R, R, R, A, R, R),
    'allocated-nic': (R, A, R, A, R, A),
    'allocated-numa': (A, R, R, A, A, A),
    'other-numa': (R, R, R, A, R, R),
    'sharing-provider': (A, R, R, R, R, A),
    'shared-disk-root-trait': (A, R, A, A, A, A),
    'full-host-root-trait': (A, R, A, A, A, A),
    'full-host-nowhere': (R, R, R, R, R, R),
    'held-gpu-model': (A, R, R, A, A, A),
    'other-gpu-model': (R, R, R, A, R, R),
    'full-held-gpu': (A, R, R, A, R, A),
    'forbidden-trait-appeared': (A, R, A, A, A, A),
    # What nova derives from the image's other properties.
    'vtpm-tpm-host': (A, R, A, A, A, A),
    'vtpm-no-tpm': (R, R, R, R, R, R),
    'secure-boot-missing': (R, R, R, R, R, R),
    'image-type-prefilter': (R, R, R, R, R, R),
    'image-type-no-prefilter': (A, A, A, A, A, A),
    'memory-encryption': (R, R, R, R, R, R),
    'no-hyperthreading': (R, R, R, R, R, R),
    'isolated-plain-image': (R, R, R, R, R, R),
    'isolated-licensed-image': (A, A, A, A, A, A),
    'isolation-off-plain-image': (A, A, A, A, A, A),
    # The server's own image, changed since the server recorded it: judged
    # against the recorded properties, so reject refuses what is new.
    'same-image-gained-trait': (R, R, R, R, R, R),
    'same-image-gained-vtpm': (R, R, R, R, R, R),
    'same-image-gained-vtpm-tpm-host': (A, R, A, A, A, A),
}
#: The cases of images without trait: properties, judged by what nova
#: derives from their other properties.
DERIVED_CASES = ('vtpm-tpm-host', 'vtpm-no-tpm', 'secure-boot-missing',
                 'image-type-prefilter', 'image-type-no-prefilter',
                 'memory-encryption', 'no-hyperthreading')
#: Cases where in_tree_candidates is inconclusive and root_traits decides.
FALLBACK_CASES = {'sharing-provider', 'shared-disk-root-trait',
                  'full-host-root-trait', 'full-host-nowhere',
                  'full-held-gpu', 'forbidden-trait-appeared'}

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
                if name == 'held_providers':
                    self.assertLessEqual(row['Requests'], 3, case)

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
        self.assertIn("forbidden by the server's flavor",
                      seen['forbidden-by-flavor']['root_traits']['Reason'])

    def test_default_is_a_compact_matrix_within_120_columns(self):
        rc, out, err = run('simulate')

        self.assertEqual(0, rc, err)
        lines = out.splitlines()
        self.assertLessEqual(max(len(line) for line in lines), 120, out)
        cells = {}
        for line in lines:
            parts = [p.strip() for p in line.split('|')]
            if len(parts) == 11 and parts[1] in SAMPLE_MATRIX:
                cells[parts[1]] = parts[3:10]
        self.assertEqual(
            ['held', 'reject', 'root', 'tree', 'intree', 'alloc', '!'],
            [p.strip() for p in lines[1].split('|')][3:10])
        self.assertEqual(list(SAMPLE_MATRIX), list(cells))
        short = {A: 'ok', R: 'no'}
        for case, outcomes in SAMPLE_MATRIX.items():
            expected = [short[o] for o in outcomes]
            if case in FALLBACK_CASES:
                expected[4] += '*'
            self.assertEqual(expected, cells[case][:6], case)
            self.assertEqual('!' if len(set(outcomes)) > 1 else '',
                             cells[case][6], case)
        self.assertIn('* = decided by the fallback strategy (root_traits)',
                      out)
        self.assertIn('intree = in_tree_candidates', out)

    def test_long_is_the_per_decision_table(self):
        rc, out, err = run('simulate', '--long', '--case', 'nowhere',
                           '--strategy', 'root_traits')

        self.assertEqual(0, rc, err)
        header = [p.strip() for p in out.splitlines()[1].split('|')][1:-1]
        self.assertEqual(list(simulate.Simulate.COLUMNS), header)
        self.assertNotIn('ok = accept', out)

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
        path = scenario.sample_path()
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

    def test_derived_requirements_name_their_properties(self):
        rc, out, err = run('simulate', '--long', '-f', 'json',
                           '--strategy', 'held_providers',
                           *[a for c in DERIVED_CASES for a in ('--case', c)])
        self.assertEqual(0, rc, err)
        self.assertNotIn('not judged', err)
        by = {r['Case']: r for r in json.loads(out)}
        self.assertEqual({'judged'}, {r['Derived'] for r in by.values()})
        self.assertIn('hw_tpm_version=2.0 -> COMPUTE_SECURITY_TPM_2_0',
                      by['vtpm-no-tpm']['Requirements'])
        self.assertEqual('root', by['vtpm-tpm-host']['Traits At'])
        self.assertEqual('os_secure_boot=required -> '
                         'COMPUTE_SECURITY_UEFI_SECURE_BOOT',
                         by['secure-boot-missing']['Requirements'])
        # The case's [scheduler] option turns the image type prefilter on.
        self.assertEqual('disk_format=raw -> root:COMPUTE_IMAGE_TYPE_RAW',
                         by['image-type-prefilter']['Requirements'])
        self.assertEqual('-', by['image-type-no-prefilter']['Requirements'])
        self.assertIn('hw_mem_encryption=true -> MEM_ENCRYPTION_CONTEXT:1',
                      by['memory-encryption']['Requirements'])
        self.assertIn('resources-not-held', by['memory-encryption']['Reason'])
        self.assertEqual('hw_cpu_thread_policy=isolate -> '
                         '!HW_CPU_HYPERTHREADING',
                         by['no-hyperthreading']['Requirements'])
        self.assertEqual('root (forbidden by image)',
                         by['no-hyperthreading']['Traits At'])

    def test_scheduler_options_come_from_the_config_file(self):
        conf = self.write('[scheduler]\n'
                          'query_placement_for_image_type_support = true\n')
        rc, out, err = run('simulate', '--matrix', '-f', 'json',
                           '--case', 'image-type-no-prefilter',
                           '--config-file', conf)
        self.assertEqual(0, rc, err)
        row, = json.loads(out)
        self.assertEqual('nowhere', row['Traits At'])
        self.assertEqual('reject', row['held_providers'])

    def test_bad_scheduler_option_is_one_line(self):
        conf = self.write('[scheduler]\nimage_metadata_prefilter = maybe\n')
        rc, out, err = run('simulate', '--case', 'root-trait',
                           '--config-file', conf)
        self.assertEqual(2, rc)
        self.assertEqual(
            "nova-image-traits: error: Value for option "
            "image_metadata_prefilter in %s is not valid: Unexpected "
            "boolean value 'maybe'\n" % conf, err)

    def test_without_nova_says_derived_requirements_were_not_judged(self):
        def blocked():
            raise ImportError("No module named 'nova'", name='nova')
        with mock.patch.object(derive, '_boot_requirements', blocked):
            rc, out, err = run('simulate', '--long', '-f', 'json',
                               '--strategy', 'held_providers',
                               '--case', 'vtpm-no-tpm', '--case',
                               'root-trait')
        self.assertEqual(0, rc, err)
        self.assertEqual(1, err.count('not judged'), err)
        self.assertIn('simulate: nova is not importable here', err)
        rows = {r['Case']: r for r in json.loads(out)}
        self.assertEqual({'unknown'}, {r['Derived'] for r in rows.values()})
        # Judged on its trait: properties alone, of which it has none.
        self.assertEqual('accept', rows['vtpm-no-tpm']['Outcome'])
        self.assertEqual('accept', rows['root-trait']['Outcome'])

    def test_where_nova_is_not_installed(self):
        # A real ImportError, in a process where "import nova" fails.
        code = ('import sys; sys.modules["nova"] = None; '
                'from nova_image_traits.cmd import cli; '
                'sys.exit(cli.main(sys.argv[1:]))')
        proc = subprocess.run(
            [sys.executable, '-c', code, 'simulate', '--matrix', '-f',
             'json', '--case', 'vtpm-no-tpm', '--case', 'root-trait'],
            capture_output=True, text=True, timeout=300)
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertIn('simulate: nova is not importable here', proc.stderr)
        self.assertIn('was not judged', proc.stderr)
        rows = {r['Case']: r for r in json.loads(proc.stdout)}
        self.assertEqual('accept', rows['vtpm-no-tpm']['held_providers'])
        self.assertEqual(SAMPLE_MATRIX['root-trait'], tuple(
            rows['root-trait'][s].split(' ')[0] for s in STRATEGIES))

    def test_unknown_case_is_a_usage_error(self):
        rc, out, err = run('simulate', '--case', 'no-such-case')
        self.assertEqual(2, rc)
        self.assertIn('unknown case(s) no-such-case', err)


DOC_MATRIX = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'doc', 'source', 'user',
    'strategy-matrix.csv')


#: The nova major version the strategies page's matrix is made with.
DOC_NOVA = '34'
#: The sample cloud's cases whose images nova derives requirements from.
DERIVED_CASES = ('vtpm-tpm-host', 'vtpm-no-tpm', 'secure-boot-missing',
                 'image-type-prefilter', 'image-type-no-prefilter',
                 'memory-encryption', 'no-hyperthreading',
                 'same-image-gained-vtpm', 'same-image-gained-vtpm-tpm-host')


def _where_blanked(text):
    """The CSV matrix with the derived cases' 'Traits At' cell blanked."""
    rows = list(csv.reader(io.StringIO(text)))
    for row in rows[1:]:
        if row[0] in DERIVED_CASES:
            row[1] = '?'
    return rows


class DocMatrixTest(testtools.TestCase):
    """The strategies page shows what the code decides."""

    def test_doc_table_is_the_simulator_output(self):
        rc, out, err = run('simulate', '--matrix', '-f', 'csv')
        self.assertEqual(0, rc, err)
        if os.environ.get('NIT_REGENERATE_DOCS'):
            with open(DOC_MATRIX, 'w') as f:
                f.write(out)
        with open(DOC_MATRIX) as f:
            committed = f.read()
        if importlib.metadata.version('nova').split('.')[0] != DOC_NOVA:
            # NOTE(series 2025.1, 2025.2, 2026.1): the page is made with the
            # newest nova. An older one derives less from some images (nova
            # 31 asks no memory encryption model trait), so where the derived
            # traits are may read differently; every decision must not.
            committed, out = (_where_blanked(committed), _where_blanked(out))
        self.assertEqual(
            committed, out,
            '%s is not what the simulator decides; regenerate it with '
            'NIT_REGENERATE_DOCS=1 tox -e functional -- DocMatrixTest'
            % DOC_MATRIX)

    def test_matrix_agrees_with_the_long_table(self):
        rc, out, err = run('simulate', '--matrix', '-f', 'json')
        self.assertEqual(0, rc, err)
        rows = json.loads(out)
        self.assertEqual(list(SAMPLE_MATRIX), [r['Case'] for r in rows])
        for row in rows:
            self.assertEqual(
                SAMPLE_MATRIX[row['Case']],
                tuple(row[s].split(' ')[0] for s in STRATEGIES))
            self.assertEqual(
                row['Case'] in FALLBACK_CASES,
                row['in_tree_candidates'].endswith('(root_traits)'))
