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
"""Derived requirements, and held_providers' edges, on a real placement.

The requirements are built here as nova's code builds them
(``tests/functional/nova/test_derived.py`` derives them with nova); each
strategy applies its rule to them.
"""

import uuid

from nova_image_traits import decision
from nova_image_traits import engine
from nova_image_traits import flavor as nit_flavor
from nova_image_traits import request as nit_request
from nova_image_traits import requirements as reqs
from tests.functional import test_held_providers as held
from tests.functional import test_strategies

A = decision.ACCEPT
R = decision.REJECT
SCSI = 'COMPUTE_STORAGE_BUS_SCSI'
HT = 'HW_CPU_HYPERTHREADING'
TPM = 'COMPUTE_SECURITY_TPM_2_0'
STRATEGIES = test_strategies.STRATEGIES

#: What transform_image_metadata asks of hw_disk_bus=scsi.
DISK_BUS = reqs.Requirement(SCSI, reqs.ROOT, sources=('hw_disk_bus=scsi',),
                            via='transform_image_metadata')
#: What ResourceRequest asks of hw_cpu_thread_policy=isolate.
NO_HT = reqs.Requirement(HT, reqs.UNSUFFIXED, True,
                         sources=('hw_cpu_thread_policy=isolate',),
                         via=reqs.RESOURCE_REQUEST)
#: What ResourceRequest asks of hw_tpm_version=2.0.
VTPM = reqs.Requirement(TPM, sources=('hw_tpm_version=2.0',),
                        via=reqs.RESOURCE_REQUEST)


class DerivedTestBase(held.HeldProvidersTestBase):

    def judge(self, node, strategy, derived, flavor=held.PLAIN_FLAVOR,
              original_derived=None):
        self.conf.set_override('strategy', strategy, 'image_traits')
        req = nit_request.RebuildRequest(
            instance_uuid=self.instance, compute_node_uuid=node,
            image_properties={}, flavor=flavor,
            original_image_properties={}, host='test-host',
            derived=reqs.Derived(traits=derived),
            original_derived=original_derived)
        return engine.decide(req, conf=self.conf, client=self.client)

    def verdicts(self, node, derived, **kwargs):
        return {s: self.judge(node, s, derived, **kwargs).outcome
                for s in STRATEGIES}

    def numa_host(self, child_traits=(), root_traits=()):
        """A host whose server holds VCPU on numa0; numa1 it does not."""
        self.builder.ensure_traits([SCSI, HT, TPM])
        node = self.host([
            dict(name='numa0', inventory={'VCPU': 4, 'MEMORY_MB': 4096}),
            dict(name='numa1', inventory={'VCPU': 4, 'MEMORY_MB': 4096},
                 traits=list(child_traits))], vcpus=0, memory_mb=0)
        self.builder.set_traits(node.uuid,
                                ['HW_CPU_X86_SSE42'] + list(root_traits))
        self.allocate({node.children['numa0']: {'VCPU': 1,
                                                'MEMORY_MB': 512},
                       node.uuid: {'DISK_GB': 1}})
        return node


class TestRootRequirement(DerivedTestBase):
    """A request filter's trait must be on the compute node itself."""

    def test_on_an_unheld_child_only(self):
        node = self.numa_host(child_traits=[SCSI])
        got = self.verdicts(node.uuid, (DISK_BUS,))
        self.assertEqual({'held_providers': R, 'reject': R,
                          'root_traits': R, 'tree_traits': A,
                          'in_tree_candidates': R,
                          'allocation_traits': R}, got)
        result = self.judge(node.uuid, 'held_providers', (DISK_BUS,))
        self.assertEqual(
            'hw_disk_bus=scsi needs COMPUTE_STORAGE_BUS_SCSI: missing on '
            'the resources this server uses. Rebuild with another image, or '
            'create a new server with this one.', result.user_reason())
        self.assertLessEqual(result.requests, 3)

    def test_on_the_root(self):
        node = self.numa_host(root_traits=[SCSI])
        got = self.verdicts(node.uuid, (DISK_BUS,))
        self.assertEqual(R, got.pop('reject'))
        self.assertEqual({A}, set(got.values()))

    def test_reject_accepts_what_the_current_image_asked(self):
        node = self.numa_host()
        result = self.judge(node.uuid, 'reject', (DISK_BUS,),
                            original_derived=frozenset([DISK_BUS]))
        self.assertEqual(A, result.outcome)


class TestForbiddenRequirement(DerivedTestBase):
    """hw_cpu_thread_policy=isolate forbids HW_CPU_HYPERTHREADING."""

    def test_on_the_held_numa_node(self):
        node = self.numa_host()
        self.builder.set_traits(node.children['numa0'], [HT])
        got = self.verdicts(node.uuid, (NO_HT,))
        # The held NUMA node serves the unsuffixed group: a boot there would
        # be refused. The root does not have it.
        self.assertEqual(R, got['held_providers'])
        self.assertEqual(A, got['root_traits'])
        self.assertEqual(R, got['tree_traits'])
        self.assertEqual(R, got['allocation_traits'])
        result = self.judge(node.uuid, 'held_providers', (NO_HT,))
        self.assertIn('hw_cpu_thread_policy=isolate forbids '
                      'HW_CPU_HYPERTHREADING: present on the resources this '
                      'server uses.', result.user_reason())

    def test_on_an_unheld_numa_node(self):
        node = self.numa_host(child_traits=[HT])
        got = self.verdicts(node.uuid, (NO_HT,))
        self.assertEqual(A, got['held_providers'])
        self.assertEqual(A, got['allocation_traits'])
        self.assertEqual(R, got['tree_traits'])

    def test_required_and_forbidden_by_the_image(self):
        node = self.numa_host()
        self.conf.set_override('strategy', 'held_providers', 'image_traits')
        req = nit_request.RebuildRequest(
            instance_uuid=self.instance, compute_node_uuid=node.uuid,
            image_properties={'trait:' + HT: 'required'},
            flavor=held.PLAIN_FLAVOR, host='test-host',
            derived=reqs.Derived(traits=(NO_HT,)))
        result = engine.decide(req, conf=self.conf, client=self.client)
        self.assertEqual(R, result.outcome)
        self.assertEqual(0, result.requests)
        self.assertIn('both required and forbidden by the new image',
                      result.user_reason())


class TestResourcesARebuildCannotAdd(DerivedTestBase):

    def test_memory_encryption_context_not_held(self):
        node = self.numa_host(root_traits=['HW_CPU_X86_AMD_SEV'])
        need = reqs.ResourceNeed('MEM_ENCRYPTION_CONTEXT', 1,
                                 ('hw_mem_encryption=true',))
        for strategy in STRATEGIES:
            self.conf.set_override('strategy', strategy, 'image_traits')
            req = nit_request.RebuildRequest(
                instance_uuid=self.instance, compute_node_uuid=node.uuid,
                image_properties={}, flavor=held.PLAIN_FLAVOR,
                host='test-host', derived=reqs.Derived(resources=(need,)))
            result = engine.decide(req, conf=self.conf, client=self.client)
            self.assertEqual(R, result.outcome, strategy)
            self.assertEqual('resources-not-held', result.cause)
            self.assertEqual(1, result.requests)
            self.assertTrue(result.user_reason().startswith(
                'hw_mem_encryption=true needs MEM_ENCRYPTION_CONTEXT: this '
                'server does not hold it'), result.user_reason())

    def test_held_resources_pass(self):
        node = self.numa_host()
        need = reqs.ResourceNeed('VCPU', 1, ('hw_cpu_policy=shared',))
        self.conf.set_override('strategy', 'held_providers', 'image_traits')
        req = nit_request.RebuildRequest(
            instance_uuid=self.instance, compute_node_uuid=node.uuid,
            image_properties={}, flavor=held.PLAIN_FLAVOR, host='test-host',
            derived=reqs.Derived(resources=(need,), traits=(VTPM,)))
        self.builder.set_traits(node.children['numa0'], [TPM])
        result = engine.decide(req, conf=self.conf, client=self.client)
        self.assertEqual(A, result.outcome, result.detail)
        # The allocations are read once for the resources and the traits.
        self.assertLessEqual(result.requests, 3)


class TestHeldProvidersDefects(held.HeldProvidersTestBase):
    """Two verdicts issue 19's review found wrong."""

    def _pool(self, node, traits=()):
        agg = str(uuid.uuid4())
        self.builder.add_to_aggregate(node.uuid, agg)
        return self.builder.make_sharing_provider(
            'pool-%s' % agg[:8], agg, {'DISK_GB': 1000}, traits=traits)

    def test_evacuated_disk_moved_to_another_pool(self):
        # The evacuation is unfinished: the server holds the dead source
        # host and its pool S1 (with the trait) and this host and its
        # pool S2 (without). S1 shares no aggregate with this host.
        here = self.host([], disk_gb=0)
        there = self.host([], disk_gb=0)
        s2 = self._pool(here)
        s1 = self._pool(there, traits=[held.PMEM])
        res = {'VCPU': 1, 'MEMORY_MB': 512}
        self.allocate({here.uuid: dict(res), s2: {'DISK_GB': 1},
                       there.uuid: dict(res), s1: {'DISK_GB': 1}})
        result = self.decide(here.uuid, 'held_providers', trait=held.PMEM,
                             flavor=held.PLAIN_FLAVOR)
        self.assertEqual(R, result.outcome, result.detail)
        self.assertEqual({held.PMEM}, set(result.missing))
        # The pool this host shares still counts.
        self.builder.set_traits(s2, ['MISC_SHARES_VIA_AGGREGATE', held.PMEM])
        result = self.decide(here.uuid, 'held_providers', trait=held.PMEM,
                             flavor=held.PLAIN_FLAVOR)
        self.assertEqual(A, result.outcome, result.detail)

    def test_no_allocation_on_this_host_is_inconclusive(self):
        # A failed resize left the server in ERROR holding only the
        # destination; nothing it holds tells about this host.
        here = self.host([])
        there = self.host([])
        self.builder.set_traits(here.uuid, ['HW_CPU_X86_SSE42', held.PMEM])
        self.allocate({there.uuid: {'VCPU': 1, 'MEMORY_MB': 512,
                                    'DISK_GB': 1}})
        result = self.decide(here.uuid, 'held_providers', trait=held.PMEM,
                             flavor=held.PLAIN_FLAVOR)
        self.assertEqual(A, result.outcome, result.detail)
        self.assertEqual('root_traits', result.fallback)
        self.assertIn('none of the allocations of the server is on this '
                      'compute node', result.detail)


class TestNumberedGroupForbidden(held.HeldProvidersTestBase):
    """``trait1:X=forbidden`` does not forbid the image's ``X``."""

    def test_every_strategy_judges_the_trait(self):
        flavor = nit_flavor.Flavor(
            vcpus=1, memory_mb=512, root_gb=1,
            extra_specs={'resources1:VGPU': '1',
                         'trait1:%s' % held.T4: 'forbidden'})
        node = self.host([dict(name='gpu', inventory={'VGPU': 2})])
        self.builder.set_traits(node.uuid, ['HW_CPU_X86_SSE42', held.T4])
        self.allocate({node.uuid: {'VCPU': 1, 'MEMORY_MB': 512,
                                   'DISK_GB': 1},
                       node.children['gpu']: {'VGPU': 1}})
        for strategy in STRATEGIES:
            result = self.decide(node.uuid, strategy, trait=held.T4,
                                 flavor=flavor)
            self.assertNotEqual('forbidden-by-flavor', result.cause,
                                strategy)
        self.assertEqual(A, self.decide(node.uuid, 'held_providers',
                                        trait=held.T4,
                                        flavor=flavor).outcome)


class TestRootRequirementOnOldPlacement(DerivedTestBase):
    """Placement 1.34 takes no root_required: in_tree_candidates falls back."""

    placement_max_microversion = '1.34'

    def test_in_tree_candidates_falls_back_without_asking(self):
        node = self.numa_host(root_traits=[SCSI])
        for root_traits, expected in (([SCSI], A), ([], R)):
            self.builder.set_traits(node.uuid,
                                    ['HW_CPU_X86_SSE42'] + root_traits)
            self.server.reset_recorder()
            result = self.judge(node.uuid, 'in_tree_candidates',
                                (DISK_BUS,))
            self.assertEqual(expected, result.outcome, result.detail)
            self.assertEqual('root_traits', result.fallback)
            self.assertIn('older than microversion 1.35, which this query '
                          'needs', result.detail)
            self.assertFalse([p for _m, p in self.server.recorder
                              if p.startswith('/allocation_candidates')])
