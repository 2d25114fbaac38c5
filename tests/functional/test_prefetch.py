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
"""The audit's allocation index against a real placement."""

import uuid

from nova_image_traits.cli import prefetch
from nova_image_traits import engine
from nova_image_traits import request as nit_request
from tests.functional import test_strategies

POOL_TRAIT = 'CUSTOM_POOL_FAST'


class TestCachingClient(test_strategies.StrategyTestBase):

    def setUp(self):
        super().setUp()
        self.builder.ensure_traits([POOL_TRAIT])
        self.node = self.builder.create_compute_node(
            'cn-%s' % uuid.uuid4().hex[:8], disk_gb=0,
            traits=['HW_CPU_X86_SSE42'],
            children=[dict(name='gpu', inventory={'CUSTOM_MAGIC': 8},
                           traits=[test_strategies.TRAIT])])
        agg = str(uuid.uuid4())
        self.builder.add_to_aggregate(self.node.uuid, agg)
        self.pool = self.builder.make_sharing_provider(
            'pool-%s' % agg[:8], agg, {'DISK_GB': 1000},
            traits=[POOL_TRAIT])
        # Half the servers use the child, all use the shared pool.
        self.servers = []
        for i in range(6):
            allocs = {self.node.uuid: {'VCPU': 1, 'MEMORY_MB': 128},
                      self.pool: {'DISK_GB': 1}}
            if i % 2:
                allocs[self.node.children['gpu']] = {'CUSTOM_MAGIC': 1}
            server = str(uuid.uuid4())
            self.builder.allocate(server, allocs, str(uuid.uuid4()),
                                  str(uuid.uuid4()))
            self.servers.append(server)
        self.conf.set_override('strategy', 'allocation_traits',
                               'image_traits')

    def _decisions(self, client, trait):
        return [engine.decide(nit_request.RebuildRequest(
            instance_uuid=server, compute_node_uuid=self.node.uuid,
            image_properties={'trait:%s' % trait: 'required'},
            flavor=test_strategies.SHARED_FLAVOR), conf=self.conf,
            client=client).outcome for server in self.servers]

    def test_index_answers_like_placement_with_fewer_requests(self):
        for trait in (test_strategies.TRAIT, POOL_TRAIT, 'HW_CPU_X86_SSE42',
                      'HW_CPU_X86_AVX2'):
            direct = self._decisions(self.client, trait)
            caching = prefetch.CachingClient(self.client)
            caching.index_node(caching.start(5, 8000), self.node.uuid)
            self.server.reset_recorder()
            self.assertEqual(direct, self._decisions(caching, trait), trait)
            # No server's allocations were read one by one.
            self.assertFalse([p for _m, p in self.server.recorder
                              if p.startswith('/allocations/')], trait)
        # The child trait: only the servers allocated on the child pass.
        self.assertEqual(['reject', 'accept'] * 3,
                         self._decisions(self.client, test_strategies.TRAIT))
        # The pool's trait counts for every server: it holds their disk.
        self.assertEqual(['accept'] * 6,
                         self._decisions(self.client, POOL_TRAIT))

    def test_requests_do_not_grow_with_servers(self):
        caching = prefetch.CachingClient(self.client)
        caching.max_version(caching.start(5, 8000))
        before = caching.sent
        self.server.reset_recorder()
        caching.index_node(caching.start(5, 8000), self.node.uuid)
        self._decisions(caching, POOL_TRAIT)
        traits = [p for _m, p in self.server.recorder
                  if p.endswith('/traits')]
        # Each provider's traits are read once, whatever the number of
        # servers: the root's, the pool's, and the child's when a server
        # on the child reads it before the pool.
        self.assertEqual(len(set(traits)), len(traits))
        self.assertIn(len(traits), (2, 3))
        # tree, aggregates, sharing providers, then the allocations of
        # root, child and pool.
        self.assertEqual(3 + 3 + len(traits), caching.sent - before)
