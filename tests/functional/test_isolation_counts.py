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
"""Aggregate isolation against a real placement: verdicts and requests.

The numbers are those ``doc/source/user/strategies.rst`` gives: each
strategy's placement requests per decision, with isolation off, with it
on and the server outside every forbidden aggregate, and for a refusal.
"""

import dataclasses
import uuid

from nova_image_traits import decision
from nova_image_traits import engine
from nova_image_traits.reasons import isolation as isolation_reason
from nova_image_traits import request as nit_request
from tests.functional import test_strategies

STRATEGIES = test_strategies.STRATEGIES
GOLD_AGG = str(uuid.uuid4())
OTHER_AGG = str(uuid.uuid4())


class TestIsolationRequests(test_strategies.StrategyTestBase):

    #: strategy: (off, on outside, on refused), the trait on the root
    EXPECTED = {
        'held_providers': (2, 3, 1),
        'reject': (0, 2, 1),
        'root_traits': (1, 3, 1),
        'tree_traits': (1, 3, 1),
        'in_tree_candidates': (2, 3, 1),
        'allocation_traits': (2, 3, 1),
    }

    def decide_isolated(self, node, strategy, forbidden):
        self.conf.set_override('strategy', strategy, 'image_traits')
        self.conf.set_override('fallback_strategy', strategy, 'image_traits')
        request = dataclasses.replace(
            self._request(node), forbidden_aggregates=frozenset(forbidden))
        self.server.reset_recorder()
        result = engine.decide(request, conf=self.conf, client=self.client)
        self.assertEqual(len(self.placement_gets()), result.requests)
        return result

    def _request(self, node):
        return nit_request.RebuildRequest(
            instance_uuid=self.instance, compute_node_uuid=node,
            image_properties={'trait:%s' % test_strategies.TRAIT:
                              'required'},
            flavor=test_strategies.FLAVOR, original_image_properties={},
            host='test-host')

    def test_requests_per_strategy(self):
        outside = self.build_host('root', children=8)
        self.builder.add_to_aggregate(outside, OTHER_AGG)
        self.client.max_version(self.client.start(5, 8000))
        counts = {}
        for strategy in STRATEGIES:
            off = self.decide_isolated(outside, strategy, ())
            on = self.decide_isolated(outside, strategy, [GOLD_AGG])
            self.assertEqual(off.outcome, on.outcome, strategy)
            self.assertNotEqual(isolation_reason.CAUSE, on.cause)
            counts[strategy] = (off.requests, on.requests)
        self.builder.add_to_aggregate(outside, GOLD_AGG)
        for strategy in STRATEGIES:
            refused = self.decide_isolated(outside, strategy, [GOLD_AGG])
            self.assertEqual(decision.REJECT, refused.outcome, strategy)
            self.assertEqual(isolation_reason.CAUSE, refused.cause)
            counts[strategy] += (refused.requests,)
        self.assertEqual(self.EXPECTED, counts)

    def test_sharing_provider_inside_is_refused_by_every_strategy(self):
        node = self.build_host('sharing')
        pools = [rp for rp in self.client.start(5, 8000).get(
            '/allocations/%s' % self.instance)['allocations'] if rp != node]
        self.assertEqual(1, len(pools))
        self.builder.add_to_aggregate(pools[0], GOLD_AGG)
        for strategy in STRATEGIES:
            result = self.decide_isolated(node, strategy, [GOLD_AGG])
            self.assertEqual(decision.REJECT, result.outcome, strategy)
            self.assertEqual(isolation_reason.CAUSE, result.cause)
            self.assertEqual((pools[0],), result.providers)
