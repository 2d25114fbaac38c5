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
"""The trees where strategies part ways, on a real placement.

Each test builds a host the way its drivers report it, places the server
as placement would at boot, and rebuilds it with an image whose trait sits
on a provider the server holds, or on one it does not.
"""

import uuid

from nova_image_traits import decision
from nova_image_traits import flavor as nit_flavor
from tests.functional import test_strategies

A = decision.ACCEPT
R = decision.REJECT
T4 = 'CUSTOM_GPU_T4'
A100 = 'CUSTOM_GPU_A100'
HUGEPAGES = 'CUSTOM_HUGEPAGES_1G'
PMEM = 'CUSTOM_PMEM'
BAD = 'CUSTOM_QUARANTINED'

#: A trait on a provider of the host that the server does not use: only
#: tree_traits, which judges the whole tree, lets it pass.
ONLY_TREE_TRAITS_ACCEPTS = {
    'held_providers': (R, None),
    'reject': (R, None),
    'root_traits': (R, None),
    'tree_traits': (A, None),
    'in_tree_candidates': (R, None),
    'allocation_traits': (R, None)}

VGPU_FLAVOR = nit_flavor.Flavor(vcpus=1, memory_mb=512, root_gb=1,
                                extra_specs={'resources:VGPU': '1'},
                                name='vgpu-unsuffixed')
PLAIN_FLAVOR = nit_flavor.Flavor(vcpus=1, memory_mb=512, root_gb=1,
                                 name='plain')


class HeldProvidersTestBase(test_strategies.StrategyTestBase):

    def host(self, children, disk_gb=100, vcpus=8, memory_mb=16384):
        self.builder.ensure_traits([T4, A100, HUGEPAGES, PMEM, BAD])
        return self.builder.create_compute_node(
            'cn-%s' % uuid.uuid4().hex[:8], vcpus=vcpus,
            memory_mb=memory_mb, disk_gb=disk_gb,
            traits=['HW_CPU_X86_SSE42'], children=children)

    def allocate(self, allocs):
        self.builder.allocate(self.instance, allocs, str(uuid.uuid4()),
                              str(uuid.uuid4()))

    def verdicts(self, node, trait, flavor, strategies=None):
        found = {}
        for strategy in strategies or test_strategies.STRATEGIES:
            result = self.decide(node, strategy, trait=trait, flavor=flavor)
            found[strategy] = (result.outcome, result.fallback)
        return found


class TestVGPUTwoTypes(HeldProvidersTestBase):
    """``resources:VGPU=1`` (unsuffixed) on a host with two pGPU types."""

    def _build(self, gpu_slots=4):
        node = self.host([
            dict(name='pgpu0', inventory={'VGPU': gpu_slots}, traits=[T4]),
            dict(name='pgpu1', inventory={'VGPU': 4}, traits=[A100])])
        self.allocate({
            node.uuid: {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1},
            node.children['pgpu0']: {'VGPU': 1}})
        return node.uuid

    def test_trait_of_the_held_pgpu(self):
        got = self.verdicts(self._build(), T4, VGPU_FLAVOR)
        self.assertEqual({
            'held_providers': (A, None),
            'reject': (R, None),
            'root_traits': (R, None),
            'tree_traits': (A, None),
            'in_tree_candidates': (A, None),
            'allocation_traits': (A, None)}, got)

    def test_trait_of_the_other_pgpu(self):
        # The server's vGPU stays on the T4: an A100 image must not pass.
        got = self.verdicts(self._build(), A100, VGPU_FLAVOR)
        self.assertEqual(ONLY_TREE_TRAITS_ACCEPTS, got)

    def test_full_held_pgpu(self):
        # The T4 has one slot and the server uses it; the A100 is free.
        node = self._build(gpu_slots=1)
        got = self.verdicts(node, T4, VGPU_FLAVOR)
        self.assertEqual((A, None), got['held_providers'])
        # No candidate can land on the held pGPU, so in_tree_candidates
        # cannot tell and root_traits decides.
        self.assertEqual((R, 'root_traits'), got['in_tree_candidates'])
        got = self.verdicts(node, A100, VGPU_FLAVOR)
        self.assertEqual((R, None), got['held_providers'])
        self.assertEqual((R, 'root_traits'), got['in_tree_candidates'])
        self.assertEqual((A, None), got['tree_traits'])

    def test_counts_stay_within_three(self):
        node = self._build()
        for trait in (T4, A100):
            result = self.decide(node, 'held_providers', trait=trait,
                                 flavor=VGPU_FLAVOR)
            self.assertLessEqual(result.requests, 3)


class TestNUMAChildren(HeldProvidersTestBase):
    """CPUs and memory on NUMA children, the disk on the root."""

    def _build(self):
        node = self.host([
            dict(name='numa0', inventory={'VCPU': 8, 'MEMORY_MB': 8192},
                 traits=['HW_NUMA_ROOT', HUGEPAGES]),
            dict(name='numa1', inventory={'VCPU': 8, 'MEMORY_MB': 8192},
                 traits=['HW_NUMA_ROOT', PMEM])], vcpus=0, memory_mb=0)
        self.allocate({
            node.uuid: {'DISK_GB': 1},
            node.children['numa0']: {'VCPU': 1, 'MEMORY_MB': 512}})
        return node.uuid

    def test_trait_of_the_held_numa_node(self):
        got = self.verdicts(self._build(), HUGEPAGES, PLAIN_FLAVOR)
        self.assertEqual((A, None), got['held_providers'])
        self.assertEqual((A, None), got['in_tree_candidates'])
        self.assertEqual((R, None), got['root_traits'])

    def test_trait_of_the_other_numa_node(self):
        got = self.verdicts(self._build(), PMEM, PLAIN_FLAVOR)
        self.assertEqual(ONLY_TREE_TRAITS_ACCEPTS, got)


class TestSharingAndNUMA(HeldProvidersTestBase):
    """A NUMA node for CPUs and memory, the disk from a sharing pool."""

    def test_trait_on_the_pool(self):
        node = self.host([
            dict(name='numa0', inventory={'VCPU': 8, 'MEMORY_MB': 8192})],
            vcpus=0, memory_mb=0, disk_gb=0)
        agg = str(uuid.uuid4())
        self.builder.add_to_aggregate(node.uuid, agg)
        pool = self.builder.make_sharing_provider(
            'pool-%s' % agg[:8], agg, {'DISK_GB': 1000}, traits=[PMEM])
        self.allocate({node.children['numa0']: {'VCPU': 1, 'MEMORY_MB': 512},
                       pool: {'DISK_GB': 1}})
        result = self.decide(node.uuid, 'held_providers', trait=PMEM,
                             flavor=PLAIN_FLAVOR)
        self.assertEqual(A, result.outcome)
        # The allocations, then the pool's traits and the NUMA node's, in
        # UUID order (the root holds nothing), stopping at the trait.
        self.assertLessEqual(result.requests, 3)
        result = self.decide(node.uuid, 'held_providers', trait=HUGEPAGES,
                             flavor=PLAIN_FLAVOR)
        self.assertEqual(R, result.outcome)
        # Before refusing, with nothing held by the root: the tree, to tell
        # that the server holds anything on this host at all.
        self.assertEqual(4, result.requests)


class TestFlavorForbiddenTraitAppears(HeldProvidersTestBase):
    """The host gained a trait the flavor forbids after the boot."""

    def test_image_traits_are_judged_not_the_flavor(self):
        flavor = nit_flavor.Flavor(vcpus=1, memory_mb=512, root_gb=1,
                                   extra_specs={'trait:%s' % BAD:
                                                'forbidden'})
        node = self.host([])
        self.allocate({node.uuid: {'VCPU': 1, 'MEMORY_MB': 512,
                                   'DISK_GB': 1}})
        self.builder.set_traits(node.uuid, ['HW_CPU_X86_SSE42', BAD,
                                            test_strategies.TRAIT])
        got = self.verdicts(node.uuid, test_strategies.TRAIT, flavor)
        # held_providers judges the image's traits, as nova's own check
        # does: a rebuild to a traitless image would not be stopped either.
        self.assertEqual((A, None), got['held_providers'])
        # A boot would be refused here, so no candidate exists even
        # without the image's traits: inconclusive, root_traits decides.
        self.assertEqual((A, 'root_traits'), got['in_tree_candidates'])


class TestEveryUnknownTraitNamed(HeldProvidersTestBase):
    """Placement 16 names only the first unknown trait of a query."""

    def test_every_strategy_names_all_unknown_traits(self):
        node = self.host([])
        self.allocate({node.uuid: {'VCPU': 1, 'MEMORY_MB': 512,
                                   'DISK_GB': 1}})
        unknown = {'CUSTOM_NEVER_%d_%s' % (i, uuid.uuid4().hex[:8].upper())
                   for i in range(3)}
        for strategy in test_strategies.STRATEGIES:
            self.conf.set_override('strategy', strategy, 'image_traits')
            req = test_strategies.nit_request.RebuildRequest(
                instance_uuid=self.instance, compute_node_uuid=node.uuid,
                image_properties={'trait:%s' % t: 'required'
                                  for t in unknown},
                flavor=PLAIN_FLAVOR, original_image_properties={},
                host='test-host')
            result = test_strategies.engine.decide(req, conf=self.conf,
                                                   client=self.client)
            self.assertEqual(R, result.outcome, strategy)
            self.assertEqual(unknown, set(result.missing), strategy)
            for name in unknown:
                self.assertIn(name, result.user_reason(), strategy)
            self.assertLessEqual(result.requests, 4, strategy)


class TestUnfinishedMove(HeldProvidersTestBase):
    """An evacuated server still holds its dead source host's resources."""

    def test_traits_of_the_other_compute_node_do_not_count(self):
        here = self.host([dict(name='gpu-%s' % uuid.uuid4().hex[:6],
                               inventory={'VGPU': 2})])
        there = self.host([dict(name='gpu-%s' % uuid.uuid4().hex[:6],
                                inventory={'VGPU': 2}, traits=[T4])])
        self.builder.set_traits(there.uuid, ['HW_CPU_X86_SSE42', A100])
        res = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
        self.allocate({here.uuid: dict(res),
                       list(here.children.values())[0]: {'VGPU': 1},
                       there.uuid: dict(res),
                       list(there.children.values())[0]: {'VGPU': 1}})
        for trait in (A100, T4):
            result = self.decide(here.uuid, 'held_providers', trait=trait,
                                 flavor=VGPU_FLAVOR)
            self.assertEqual(R, result.outcome, trait)
            self.assertEqual({trait}, set(result.missing))
        # Nova's own rule counts every allocated provider.
        result = self.decide(here.uuid, 'allocation_traits', trait=A100,
                             flavor=VGPU_FLAVOR)
        self.assertEqual(A, result.outcome)


class TestFullHost(HeldProvidersTestBase):
    """Capacity plays no part, in the verdict or in what it costs.

    ``tox -e bench`` measures a full host beside one with room; they are
    the same work (doc/source/admin/performance.rst).
    """

    def test_filling_the_host_changes_no_request(self):
        node = self.build_host('root')
        sent = {}
        for state in ('room', 'full'):
            if state == 'full':
                self.assertTrue(self.builder.fill(node, 'VCPU'))
            self.server.reset_recorder()
            result = self.decide(node, 'held_providers')
            sent[state] = (result.outcome, result.requests,
                           self.placement_gets())
        self.assertEqual((A, 2), sent['room'][:2])
        self.assertEqual(sent['room'], sent['full'])
