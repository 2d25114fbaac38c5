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
"""Aggregates isolated for a trait: the rule, and every strategy judging it.
"""

from unittest import mock

from nova_image_traits import decision
from nova_image_traits import engine
from nova_image_traits import exception
from nova_image_traits import flavor as nit_flavor
from nova_image_traits import isolation
from nova_image_traits import placement
from nova_image_traits.reasons import isolation as isolation_reason
from nova_image_traits import request as nit_request
from nova_image_traits.strategies import base as strategy_base
from tests.unit import base
from tests.unit import fakes

ROOT, CHILD, SHARING = fakes.ROOT, fakes.CHILD, fakes.SHARING
GOLD_AGG = 'a0a0a0a0-0000-4000-8000-00000000000a'
OTHER_AGG = 'b0b0b0b0-0000-4000-8000-00000000000b'
ALLOCATIONS = '/allocations/%s' % fakes.INSTANCE
FLAVOR = nit_flavor.Flavor(vcpus=1, memory_mb=512, root_gb=1)


def aggs(rp):
    return '/resource_providers/%s/aggregates' % rp


def held(**by_rp):
    return {'allocations': {rp: {'resources': res}
                            for rp, res in by_rp.items()}}


STRATEGIES = ('reject', 'root_traits', 'tree_traits', 'in_tree_candidates',
              'allocation_traits', 'held_providers')
ALL_ON_ROOT = held(**{ROOT: {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}})


class RuleTest(base.TestCase):
    """isolation.breach: which providers count, and what it asks."""

    def breach(self, routes, forbidden=(GOLD_AGG,)):
        session = fakes.ScriptedSession(default=lambda path, params: routes[
            path])
        request = nit_request.RebuildRequest(
            instance_uuid=fakes.INSTANCE, compute_node_uuid=ROOT,
            image_properties={}, flavor=FLAVOR)
        ctx = strategy_base.Context(request, frozenset(), session)
        found = isolation.breach(ctx, forbidden)
        return found, [call[0] for call in session.calls]

    def test_root_inside_is_refused_with_one_request(self):
        found, calls = self.breach({aggs(ROOT): {'aggregates': [
            GOLD_AGG, OTHER_AGG]}})
        self.assertEqual({ROOT: [GOLD_AGG]}, found.providers)
        self.assertEqual([aggs(ROOT)], calls)

    def test_root_outside_holding_everything(self):
        found, calls = self.breach({aggs(ROOT): {'aggregates': [OTHER_AGG]},
                                    ALLOCATIONS: ALL_ON_ROOT})
        self.assertIsNone(found)
        self.assertEqual([aggs(ROOT), ALLOCATIONS], calls)

    def test_nothing_forbidden_asks_nothing(self):
        found, calls = self.breach({}, forbidden=())
        self.assertIsNone(found)
        self.assertEqual([], calls)

    def test_sharing_provider_of_the_disk_inside(self):
        found, calls = self.breach({
            aggs(ROOT): {'aggregates': []},
            aggs(SHARING): {'aggregates': [GOLD_AGG]},
            ALLOCATIONS: held(**{ROOT: {'VCPU': 1, 'MEMORY_MB': 512},
                                 SHARING: {'DISK_GB': 1}})})
        self.assertEqual({SHARING: [GOLD_AGG]}, found.providers)
        self.assertEqual([aggs(ROOT), ALLOCATIONS, aggs(SHARING)], calls)

    def test_nested_provider_serving_the_unsuffixed_group(self):
        found, _calls = self.breach({
            aggs(ROOT): {'aggregates': []},
            aggs(CHILD): {'aggregates': [GOLD_AGG]},
            ALLOCATIONS: held(**{ROOT: {'MEMORY_MB': 512, 'DISK_GB': 1},
                                 CHILD: {'VCPU': 1}})})
        self.assertEqual({CHILD: [GOLD_AGG]}, found.providers)

    def test_provider_of_a_numbered_group_only_does_not_count(self):
        flavor = nit_flavor.Flavor(vcpus=1, memory_mb=512, root_gb=1,
                                   extra_specs={'resources1:VGPU': '1'})
        routes = {aggs(ROOT): {'aggregates': []},
                  ALLOCATIONS: held(**{ROOT: {'VCPU': 1, 'MEMORY_MB': 512,
                                              'DISK_GB': 1},
                                       CHILD: {'VGPU': 1}})}
        session = fakes.ScriptedSession(
            default=lambda path, params: routes[path])
        request = nit_request.RebuildRequest(
            instance_uuid=fakes.INSTANCE, compute_node_uuid=ROOT,
            image_properties={}, flavor=flavor)
        ctx = strategy_base.Context(request, frozenset(), session)
        self.assertIsNone(isolation.breach(ctx, [GOLD_AGG]))
        self.assertNotIn(aggs(CHILD), [c[0] for c in session.calls])

    def test_no_allocations_judges_the_root_alone(self):
        found, calls = self.breach({aggs(ROOT): {'aggregates': []},
                                    ALLOCATIONS: {'allocations': {}}})
        self.assertIsNone(found)
        self.assertEqual([aggs(ROOT), ALLOCATIONS], calls)

    def test_malformed_answer_is_a_placement_error(self):
        self.assertRaises(exception.PlacementMalformedResponse, self.breach,
                          {aggs(ROOT): {'aggregates': 'nope'}})

    def test_counted_providers_always_hold_the_root(self):
        query = FLAVOR.resource_query(False)
        self.assertEqual([frozenset([ROOT])],
                         isolation.counted_providers({}, query, ROOT))
        self.assertEqual(
            [frozenset([ROOT, SHARING])],
            isolation.counted_providers(
                {ROOT: {'VCPU': 1}, SHARING: {'DISK_GB': 1}}, query, ROOT))


class EveryStrategyTest(base.TestCase):
    """The engine judges isolation before, and whatever, the strategy."""

    def decide(self, strategy, image, root_aggregates, forbidden):
        self.flags(strategy=strategy, fallback_strategy=strategy)
        routes = {aggs(ROOT): {'aggregates': root_aggregates},
                  ALLOCATIONS: ALL_ON_ROOT}
        adapter = fakes.StubAdapter(routes)
        request = nit_request.RebuildRequest(
            instance_uuid=fakes.INSTANCE, compute_node_uuid=ROOT,
            image_properties=image, flavor=FLAVOR, host='compute-1',
            forbidden_aggregates=frozenset(forbidden))
        with mock.patch.object(placement, 'get_client') as get_client:
            result = engine.decide(request, conf=self.conf,
                                   client=fakes.StubClient(adapter))
            get_client.assert_not_called()
        return result, adapter.paths

    def test_plain_image_on_an_isolated_host_is_refused(self):
        for name in STRATEGIES:
            with self.subTest(strategy=name):
                result, paths = self.decide(name, {}, [GOLD_AGG], [GOLD_AGG])
                self.assertEqual(decision.REJECT, result.outcome)
                self.assertFalse(result.allowed)
                self.assertEqual(isolation_reason.CAUSE, result.cause)
                self.assertEqual([aggs(ROOT)], paths)
                self.assertEqual(1, result.requests)
                # That the host is isolated is host detail.
                self.assertTrue(result.names_host)
                self.assertNotIn(GOLD_AGG, result.message)
                self.assertIn(GOLD_AGG, result.detail)
                self.assertEqual((ROOT,), result.providers)

    def test_plain_image_outside_is_accepted(self):
        for name in STRATEGIES:
            with self.subTest(strategy=name):
                result, paths = self.decide(name, {}, [OTHER_AGG],
                                            [GOLD_AGG])
                self.assertTrue(result.allowed)
                self.assertEqual(decision.ACCEPT, result.outcome)
                self.assertEqual([aggs(ROOT), ALLOCATIONS], paths)
                self.assertEqual(isolation_reason.OUTSIDE, result.detail)

    def test_nothing_forbidden_sends_nothing(self):
        for name in STRATEGIES:
            with self.subTest(strategy=name):
                result, paths = self.decide(name, {}, [GOLD_AGG], [])
                self.assertTrue(result.allowed)
                self.assertEqual([], paths)

    def test_reason_names_no_aggregate_and_is_host_detail(self):
        reason = isolation_reason.isolated(isolation.Breach(
            {ROOT: [GOLD_AGG]}))
        self.assertNotIn(GOLD_AGG, reason.message)
        self.assertNotIn(ROOT, reason.message)
        self.assertNotIn('CUSTOM', reason.message)
        self.assertTrue(reason.names_host)
        self.assertIn('%s in %s' % (ROOT, GOLD_AGG), reason.detail)


class RequestTest(base.TestCase):

    def test_judged_when_isolation_forbids(self):
        request = nit_request.RebuildRequest(
            instance_uuid=fakes.INSTANCE, compute_node_uuid=ROOT,
            image_properties={})
        self.assertFalse(request.judged())
        self.assertTrue(nit_request.RebuildRequest(
            instance_uuid=fakes.INSTANCE, compute_node_uuid=ROOT,
            image_properties={},
            forbidden_aggregates=frozenset([GOLD_AGG])).judged())
