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
"""The request groups a flavor asks placement for.

The expected values are what ``nova.scheduler.utils.ResourceRequest``
builds from the same flavor at boot (read from nova 34, not imported).
"""

from nova_image_traits import flavor as nit_flavor
from tests.unit import base

GOLD = 'CUSTOM_GOLD'
AVX2 = 'HW_CPU_X86_AVX2'


def _flavor(extra_specs=None, **kwargs):
    values = dict(vcpus=2, memory_mb=2048, root_gb=20, ephemeral_gb=5,
                  swap=1536)
    values.update(kwargs)
    return nit_flavor.Flavor(extra_specs=extra_specs or {}, **values)


def _by_suffix(groups):
    return {g.suffix: g for g in groups}


class UnsuffixedResourcesTest(base.TestCase):

    def test_flavor_resources(self):
        groups = _flavor().request_groups()
        self.assertEqual(1, len(groups))
        self.assertEqual('', groups[0].suffix)
        # DISK_GB = root 20 + ephemeral 5 + ceil(1536 MiB / 1024) = 27
        self.assertEqual({'VCPU': 2, 'MEMORY_MB': 2048, 'DISK_GB': 27},
                         dict(groups[0].resources))
        self.assertEqual(frozenset(), groups[0].required)
        self.assertEqual(frozenset(), groups[0].forbidden)

    def test_swap_rounds_up_to_whole_gib(self):
        for swap, disk in ((0, 25), (1, 26), (1024, 26), (1025, 27)):
            groups = _flavor(swap=swap).request_groups()
            self.assertEqual(disk, groups[0].resources['DISK_GB'], swap)

    def test_volume_backed_drops_root_gb(self):
        groups = _flavor().request_groups(is_volume_backed=True)
        self.assertEqual(7, groups[0].resources['DISK_GB'])

    def test_volume_backed_without_local_disk_has_no_disk_gb(self):
        groups = _flavor(ephemeral_gb=0, swap=0).request_groups(
            is_volume_backed=True)
        self.assertEqual({'VCPU': 2, 'MEMORY_MB': 2048},
                         dict(groups[0].resources))

    def test_resources_override(self):
        groups = _flavor({'resources:VCPU': '8',
                          'resources:CUSTOM_BAREMETAL_GOLD': '1'}
                         ).request_groups()
        self.assertEqual({'VCPU': 8, 'MEMORY_MB': 2048, 'DISK_GB': 27,
                          'CUSTOM_BAREMETAL_GOLD': 1},
                         dict(groups[0].resources))

    def test_resources_zero_removes(self):
        # The usual ironic flavor.
        groups = _flavor({'resources:VCPU': '0', 'resources:MEMORY_MB': '0',
                          'resources:DISK_GB': '0',
                          'resources:CUSTOM_BAREMETAL_GOLD': '1'}
                         ).request_groups()
        self.assertEqual({'CUSTOM_BAREMETAL_GOLD': 1},
                         dict(groups[0].resources))

    def test_non_integer_amount_is_ignored(self):
        groups = _flavor({'resources:VCPU': 'many'}).request_groups()
        self.assertEqual(2, groups[0].resources['VCPU'])

    def test_dedicated_cpu_policy_asks_pcpu(self):
        groups = _flavor({'hw:cpu_policy': 'dedicated'}).request_groups()
        self.assertEqual({'PCPU': 2, 'MEMORY_MB': 2048, 'DISK_GB': 27},
                         dict(groups[0].resources))

    def test_shared_cpu_policy_asks_vcpu(self):
        groups = _flavor({'hw:cpu_policy': 'shared'}).request_groups()
        self.assertEqual(2, groups[0].resources['VCPU'])
        self.assertNotIn('PCPU', groups[0].resources)

    def test_explicit_pcpu_replaces_flavor_vcpus(self):
        # nova: "if VCPU not in merged_resources and PCPU not in
        # merged_resources: add VCPU" -> PCPU=4, MEMORY_MB, DISK_GB only.
        groups = _flavor({'resources:PCPU': '4'}, vcpus=4).request_groups()
        self.assertEqual({'PCPU': 4, 'MEMORY_MB': 2048, 'DISK_GB': 27},
                         dict(groups[0].resources))

    def test_granular_standard_resources_replace_unsuffixed_ones(self):
        # nova skips the flavor's VCPU, MEMORY_MB and DISK_GB when any group
        # already asks for that class (merged_resources covers every group).
        groups = _flavor({'resources1:VCPU': '1', 'resources2:VCPU': '1',
                          'resources1:MEMORY_MB': '1024',
                          'resources2:MEMORY_MB': '1024',
                          'group_policy': 'isolate'}).request_groups()
        groups = _by_suffix(groups)
        self.assertEqual({'DISK_GB': 27}, dict(groups[''].resources))
        self.assertEqual({'VCPU': 1, 'MEMORY_MB': 1024},
                         dict(groups['1'].resources))


class GranularAndTraitsTest(base.TestCase):

    def test_granular_groups(self):
        groups = _flavor({'resources1:CUSTOM_MAGIC': '1',
                          'trait1:CUSTOM_BLUE': 'required',
                          'trait1:CUSTOM_RED': 'forbidden',
                          'resources2:VGPU': '1',
                          'resources3:VGPU': '0'}).request_groups()
        self.assertEqual(['', '1', '2', '3'], [g.suffix for g in groups])
        groups = _by_suffix(groups)
        self.assertEqual({'CUSTOM_MAGIC': 1}, dict(groups['1'].resources))
        self.assertEqual(frozenset(['CUSTOM_BLUE']), groups['1'].required)
        self.assertEqual(frozenset(['CUSTOM_RED']), groups['1'].forbidden)
        self.assertEqual({'VGPU': 1}, dict(groups['2'].resources))
        self.assertEqual({}, dict(groups['3'].resources))
        self.assertEqual({'VCPU': 2, 'MEMORY_MB': 2048, 'DISK_GB': 27},
                         dict(groups[''].resources))

    def test_string_suffix(self):
        groups = _by_suffix(_flavor({'resources_GPU:VGPU': '1'}
                                    ).request_groups())
        self.assertEqual({'VGPU': 1}, dict(groups['_GPU'].resources))

    def test_trait_group_without_resources(self):
        groups = _by_suffix(_flavor({'trait1:CUSTOM_BLUE': 'required'}
                                    ).request_groups())
        self.assertEqual({}, dict(groups['1'].resources))
        self.assertEqual(frozenset(['CUSTOM_BLUE']), groups['1'].required)

    def test_unsuffixed_traits(self):
        groups = _flavor({'trait:' + AVX2: 'required',
                          'trait:CUSTOM_RED': 'forbidden',
                          'trait:CUSTOM_ODD': 'preferred'}).request_groups()
        self.assertEqual(1, len(groups))
        self.assertEqual(frozenset([AVX2]), groups[0].required)
        self.assertEqual(frozenset(['CUSTOM_RED']), groups[0].forbidden)

    def test_image_traits_go_to_the_unsuffixed_group(self):
        groups = _by_suffix(_flavor({'trait:' + AVX2: 'required',
                                     'resources1:CUSTOM_MAGIC': '1'}
                                    ).request_groups(image_traits=[GOLD]))
        self.assertEqual(frozenset([AVX2, GOLD]), groups[''].required)
        self.assertEqual(frozenset(), groups['1'].required)

    def test_keys_without_a_prefix_are_ignored(self):
        groups = _flavor({'group_policy': 'none', 'hw:numa_nodes': '1',
                          'quota:cpu_shares': '10', 'resources': '5',
                          'trait': 'required'}).request_groups()
        self.assertEqual(1, len(groups))
        self.assertEqual(frozenset(), groups[0].required)

    def test_trait_name_with_a_newline_is_kept_whole(self):
        # Not cut at the newline, nor dropped: it is judged as given.
        flavor = _flavor({'trait:CUSTOM_A\nB': 'required',
                          'trait:CUSTOM_C\n': 'forbidden'})
        self.assertEqual(frozenset(['CUSTOM_A\nB']), flavor.required_traits)
        self.assertEqual(frozenset(['CUSTOM_C\n']), flavor.forbidden_traits)


class FlavorPropertiesTest(base.TestCase):

    def test_required_and_forbidden_traits_cover_every_group(self):
        flavor = _flavor({'trait:' + AVX2: 'required',
                          'trait1:CUSTOM_BLUE': 'required',
                          'trait:CUSTOM_RED': 'forbidden',
                          'trait2:CUSTOM_GREEN': 'forbidden',
                          'trait3:CUSTOM_ODD': 'Required'})
        self.assertEqual(frozenset([AVX2, 'CUSTOM_BLUE']),
                         flavor.required_traits)
        self.assertEqual(frozenset(['CUSTOM_RED', 'CUSTOM_GREEN']),
                         flavor.forbidden_traits)

    def test_group_policy(self):
        self.assertEqual('isolate',
                         _flavor({'group_policy': 'isolate'}).group_policy)
        self.assertIsNone(_flavor().group_policy)

    def test_default_flavor_asks_nothing(self):
        groups = nit_flavor.Flavor().request_groups()
        self.assertEqual([nit_flavor.RequestGroup('')], groups)
