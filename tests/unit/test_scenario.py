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
"""The scenario loader: the model it builds and the errors it reports."""

import dataclasses
import os
import textwrap

import jsonschema

from nova_image_traits import cli
from nova_image_traits.simulate import loader
from nova_image_traits.simulate import scenario
from nova_image_traits.simulate import schema
from tests.unit import base

VALID = """\
description: two hosts
sharing_providers:
  - name: pool
    aggregates: [agg1]
    inventory: {DISK_GB: 100}
    traits: [CUSTOM_POOL]
hosts:
  - name: h1
    vcpus: 4
    aggregates: [agg1]
    traits: [HW_CPU_X86_AVX2]
    children:
      - name: h1-numa0
        inventory: {VCPU: 2, CUSTOM_MAGIC: 1}
      - name: h1-numa0-gpu
        parent: h1-numa0
        inventory: {VGPU: 1}
    full: true
  - name: h2
flavors:
  - name: f1
    extra_specs:
      resources1:VGPU: 1
      hw:cpu_realtime: yes
      trait:CUSTOM_X: forbidden
images:
  - name: i1
    properties:
      trait:hw_lowercase: required
      hw_disk_bus: virtio
      min_version: 1.5
servers:
  - name: s1
    host: h1
    flavor: f1
    image: i1
    allocations:
      h1: {VCPU: 1}
      pool: {DISK_GB: 1}
cases:
  - name: c1
    server: s1
    image: i1
    description: a case
"""


class ScenarioLoadTest(base.TestCase):

    def test_valid_scenario(self):
        scn = scenario.loads(VALID, source='valid.yaml')

        self.assertEqual('valid.yaml', scn.source)
        self.assertEqual('two hosts', scn.description)
        h1, h2 = scn.hosts
        self.assertEqual((4, 16384, 100, True), (h1.vcpus, h1.memory_mb,
                                                 h1.disk_gb, h1.full))
        self.assertEqual(['agg1'], h1.aggregates)
        self.assertEqual({'VCPU': 2, 'CUSTOM_MAGIC': 1},
                         h1.children[0].inventory)
        self.assertEqual('h1-numa0', h1.children[1].parent)
        self.assertEqual((8, False, []), (h2.vcpus, h2.full, h2.children))
        self.assertEqual(['CUSTOM_POOL'], scn.sharing_providers[0].traits)
        # Extra specs and image properties are nova's strings.
        flavor = scn.flavors[0].to_flavor()
        self.assertEqual({'resources1:VGPU': '1', 'hw:cpu_realtime': 'true',
                          'trait:CUSTOM_X': 'forbidden'},
                         dict(flavor.extra_specs))
        self.assertEqual({'CUSTOM_X'}, flavor.forbidden_traits)
        self.assertEqual((1, 512, 1), (flavor.vcpus, flavor.memory_mb,
                                       flavor.root_gb))
        # Image properties are user input: invalid trait names are kept
        # for the engine to reject.
        self.assertEqual('required',
                         scn.images[0].properties['trait:hw_lowercase'])
        self.assertEqual('1.5', scn.images[0].properties['min_version'])
        self.assertEqual({'h1': {'VCPU': 1}, 'pool': {'DISK_GB': 1}},
                         scn.servers[0].allocations)
        self.assertEqual('a case', scn.cases[0].description)
        self.assertIn('h1-numa0-gpu', [c.name for c in h1.children])
        self.assertNotIn('pool', [h.name for h in scn.hosts])
        self.assertEqual(34, scn.servers[0].lines['host'])

    def test_disk_format_and_scheduler_options(self):
        scn = scenario.loads(VALID)
        # Glance always has a disk format; qcow2 unless said otherwise.
        self.assertEqual('qcow2', scn.images[0].disk_format)
        self.assertEqual('qcow2', scn.images[0].glance()['disk_format'])
        self.assertEqual('virtio', scn.images[0].glance()['hw_disk_bus'])
        self.assertEqual({}, scn.cases[0].scheduler)

        scn = scenario.loads(VALID.replace(
            '  - name: i1\n', '  - name: i1\n    disk_format: raw\n').replace(
            '    description: a case\n',
            '    description: a case\n    scheduler:\n'
            '      query_placement_for_image_type_support: true\n'))
        self.assertEqual('raw', scn.images[0].glance()['disk_format'])
        self.assertEqual({'query_placement_for_image_type_support': True},
                         scn.cases[0].scheduler)

    def test_recorded_properties_are_the_current_image(self):
        scn = scenario.loads(VALID)
        self.assertIsNone(scn.servers[0].recorded)
        images = scn.by_name('images')
        self.assertEqual(scn.images[0].properties,
                         scn.servers[0].current(images))
        scn = scenario.loads(VALID.replace(
            '    image: i1\n    allocations:',
            '    image: i1\n    recorded: {hw_disk_bus: ide, x: 1.0}\n'
            '    allocations:'))
        # nova's strings, as the image's.
        self.assertEqual({'hw_disk_bus': 'ide', 'x': '1.0'},
                         scn.servers[0].current(scn.by_name('images')))

    def test_bundled_sample_is_valid(self):
        path = os.path.join(os.path.dirname(__file__), '..', '..',
                            'nova_image_traits', 'simulate',
                            'sample-cloud.yaml')
        scn = scenario.load(path)
        self.assertGreaterEqual(len(scn.cases), 10)
        self.assertTrue(any(h.full for h in scn.hosts))
        self.assertTrue(scn.sharing_providers)

    def test_schema_is_a_valid_json_schema(self):
        jsonschema.Draft202012Validator.check_schema(schema.SCHEMA)
        self.assertEqual(['hosts', 'flavors', 'images', 'servers', 'cases'],
                         schema.SCHEMA['required'])

    def test_each_class_has_the_fields_of_its_record(self):
        for title, cls in scenario.CLASSES.items():
            record = next(r for r in (
                schema.CHILD, schema.HOST, schema.SHARING_PROVIDER,
                schema.FLAVOR, schema.IMAGE, schema.SERVER, schema.CASE,
                schema.SCHEMA) if r['title'] == title)
            fields = [f.name for f in dataclasses.fields(cls)
                      if f.name not in ('path', 'lines', 'source')]
            self.assertEqual(list(record['properties']), fields, title)

    def test_empty_lists_and_text_take_the_defaults(self):
        scn = scenario.loads(VALID.replace('    traits: [CUSTOM_POOL]',
                                           '    traits:'), 'f.yaml')
        self.assertEqual([], scn.sharing_providers[0].traits)
        self.assertEqual('', scenario.loads(
            VALID.replace('description: two hosts', 'description:'),
            'f.yaml').description)

    def test_error_is_a_usage_error(self):
        self.assertTrue(issubclass(scenario.ScenarioError, cli.UsageError))


class ScenarioErrorTest(base.TestCase):
    """Each error names the line and the field, in one line."""

    def assertError(self, text, line, field, words):
        err = self.assertRaises(scenario.ScenarioError, scenario.loads,
                                textwrap.dedent(text), 'f.yaml')
        self.assertEqual(line, err.line, str(err))
        self.assertEqual(field, err.field, str(err))
        self.assertIn(words, err.message)
        self.assertNotIn('\n', str(err))
        prefix = 'f.yaml:%d: ' % line if line else 'f.yaml: '
        self.assertTrue(str(err).startswith(prefix), str(err))
        return err

    def replace(self, old, new):
        self.assertIn(old, VALID)
        return VALID.replace(old, new, 1)

    def test_unknown_scheduler_option(self):
        self.assertError(
            VALID + '    scheduler: {image_metadata_prefiltr: true}\n', 45,
            'cases[0].scheduler.image_metadata_prefiltr',
            'expected one of image_metadata_prefilter, '
            'query_placement_for_image_type_support')
        self.assertError(
            VALID + '    scheduler: {image_metadata_prefilter: yes please}\n',
            45, 'cases[0].scheduler.image_metadata_prefilter',
            "expected true or false, got a string 'yes please'")

    def test_unknown_key(self):
        self.assertError(self.replace('    full: true', '    ful: true'),
                         18, 'hosts[0].ful', "did you mean 'full'?")
        self.assertError(self.replace('description: two hosts',
                                      'colour: blue'),
                         1, 'colour', 'unknown field (known fields:')

    def test_wrong_types(self):
        self.assertError(self.replace('vcpus: 4', 'vcpus: four'),
                         9, 'hosts[0].vcpus',
                         "expected an integer >= 0, got a string 'four'")
        self.assertError(self.replace('vcpus: 4', 'vcpus: -1'),
                         9, 'hosts[0].vcpus', 'got an integer')
        self.assertError(self.replace('vcpus: 4', 'vcpus: true'),
                         9, 'hosts[0].vcpus', 'got a boolean')
        self.assertError(self.replace('full: true', 'full: 1'),
                         18, 'hosts[0].full', 'expected true or false')
        self.assertError(self.replace('aggregates: [agg1]\n    traits',
                                      'aggregates: agg1\n    traits'),
                         10, 'hosts[0].aggregates', 'expected a list')
        self.assertError(self.replace('{VCPU: 2, CUSTOM_MAGIC: 1}',
                                      '{VCPU: 0}'),
                         14, 'hosts[0].children[0].inventory.VCPU',
                         'expected an integer >= 1')
        # An integer key is named as a key, not as a list index.
        self.assertError(self.replace('{VCPU: 2, CUSTOM_MAGIC: 1}',
                                      '{1: 2}'),
                         14, 'hosts[0].children[0].inventory.1',
                         'expected a string, got an integer')
        self.assertError(self.replace('hw_disk_bus: virtio',
                                      'hw_disk_bus: [virtio]'),
                         30, 'images[0].properties.hw_disk_bus',
                         'expected a plain value')
        self.assertError(VALID.split('cases:')[0] + 'cases:\n  - c1\n',
                         41, 'cases[0]', "expected a mapping, got a "
                         "string 'c1'")

    def test_sharing_provider_needs_an_aggregate(self):
        for value in ('[]', 'null', ''):
            self.assertError(
                self.replace('    aggregates: [agg1]\n    inventory',
                             '    aggregates: %s\n    inventory' % value),
                4, 'sharing_providers[0].aggregates',
                'expected at least one item, got none' if value == '[]'
                else 'expected a list, got nothing')

    def test_invalid_names(self):
        self.assertError(self.replace('traits: [HW_CPU_X86_AVX2]',
                                      'traits: [hw_cpu_x86_avx2]'),
                         11, 'hosts[0].traits[0]', 'did you mean '
                         'HW_CPU_X86_AVX2?')
        self.assertError(self.replace('CUSTOM_MAGIC: 1', 'MAGIC: 1'),
                         14, 'hosts[0].children[0].inventory.MAGIC',
                         'neither a standard resource class')

    def test_missing_required(self):
        self.assertError(self.replace('    image: i1\n    allocations',
                                      '    allocations'),
                         33, 'servers[0]', "missing required field 'image'")
        self.assertError('hosts: []\nflavors: []\nimages: []\nservers: []\n',
                         1, None, "missing required field 'cases'")
        self.assertError(VALID.split('cases:')[0] + 'cases: []\n',
                         40, 'cases', 'expected at least one case')

    def test_unknown_references(self):
        self.assertError(self.replace('    host: h1', '    host: h3'),
                         34, 'servers[0].host', "unknown host 'h3'")
        self.assertError(self.replace('    flavor: f1', '    flavor: f2'),
                         35, 'servers[0].flavor', "unknown flavor 'f2'")
        self.assertError(self.replace('  - name: c1\n    server: s1',
                                      '  - name: c1\n    server: s2'),
                         42, 'cases[0].server', "unknown server 's2'")
        self.assertError(self.replace('image: i1\n    description',
                                      'image: i9\n    description'),
                         43, 'cases[0].image', "unknown image 'i9'")
        self.assertError(self.replace('parent: h1-numa0',
                                      'parent: h1-numa1'),
                         16, 'hosts[0].children[1].parent',
                         "did you mean 'h1-numa0'?")
        self.assertError(self.replace('      pool: {DISK_GB: 1}',
                                      '      h2: {DISK_GB: 1}'),
                         38, 'servers[0].allocations',
                         "provider 'h2' is neither in the tree of host h1")

    def test_duplicates(self):
        self.assertError(self.replace('  - name: h2', '  - name: h1'),
                         19, 'hosts[1].name', "duplicate provider name 'h1'")
        self.assertError(self.replace('  - name: h2', '  - name: pool'),
                         19, 'hosts[1].name', 'duplicate provider name')
        self.assertError(self.replace('    vcpus: 4',
                                      '    vcpus: 4\n    vcpus: 5'),
                         10, 'vcpus', 'duplicate key (first on line 9)')

    def test_merge_keys_may_be_overridden(self):
        text = textwrap.dedent("""\
            base: &base {vcpus: 4, memory_mb: 512}
            host:
              <<: *base
              vcpus: 8
            """)
        data = loader.parse(text, 'f.yaml')
        self.assertEqual({'vcpus': 8, 'memory_mb': 512}, dict(data['host']))
        self.assertEqual(4, data['host'].key_lines['vcpus'])
        # An explicit key given twice is still a duplicate.
        err = self.assertRaises(scenario.ScenarioError, loader.parse,
                                text + '  vcpus: 9\n', 'f.yaml')
        self.assertIn('duplicate key (first on line 4)', err.message)

    def test_bad_yaml(self):
        self.assertError(self.replace('    vcpus: 4', '   vcpus: 4'),
                         9, None, 'invalid YAML')
        self.assertError('hosts: [h1\n', 2, None, 'invalid YAML')
        self.assertError('', 1, None, 'got nothing')
        self.assertError('- a\n- b\n', 1, None, 'got a list')

    def test_unreadable_file(self):
        err = self.assertRaises(scenario.ScenarioError, scenario.load,
                                '/nonexistent/scenario.yaml')
        self.assertIsNone(err.line)
        self.assertIn('cannot read the scenario', str(err))
