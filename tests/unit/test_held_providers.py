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
"""held_providers: which held providers serve the unsuffixed group."""

from nova_image_traits import decision
from nova_image_traits import exception
from nova_image_traits import flavor as nit_flavor
from nova_image_traits import request as nit_request
from nova_image_traits import strategies
from nova_image_traits.strategies import base as strategy_base
from nova_image_traits.strategies import held_providers
from tests.unit import base
from tests.unit import fakes

ROOT = fakes.ROOT
CHILD = fakes.CHILD
SHARING = fakes.SHARING
GOLD = 'CUSTOM_GOLD'
BLUE = 'CUSTOM_BLUE'
OTHER = 'bbbbbbbb-0000-4000-8000-000000000004'
ALLOCATIONS = '/allocations/%s' % fakes.INSTANCE
SHARES = held_providers.SHARING_TRAIT
TREE = ('/resource_providers', (('in_tree', fakes.ROOT),))


def _traits(uuid):
    return '/resource_providers/%s/traits' % uuid


def _query(*groups, **kwargs):
    return nit_flavor.ResourceQuery(
        groups=tuple(nit_flavor.RequestGroup(sfx, res)
                     for sfx, res in groups), **kwargs)


PLAIN = _query(('', {'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 10}))


class UnsuffixedHoldersTest(base.TestCase):

    def holders(self, held, query=PLAIN):
        return held_providers.unsuffixed_holders(held, query)

    def test_root_alone(self):
        held = {ROOT: {'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 10}}
        self.assertEqual([frozenset([ROOT])], self.holders(held))

    def test_sharing_disk_and_numa_node(self):
        held = {CHILD: {'VCPU': 2, 'MEMORY_MB': 1024},
                SHARING: {'DISK_GB': 10}}
        self.assertEqual([frozenset([CHILD, SHARING])], self.holders(held))

    def test_numbered_group_only_provider_does_not_count(self):
        query = _query(('', {'VCPU': 2}), ('1', {'VGPU': 1}))
        held = {ROOT: {'VCPU': 2}, CHILD: {'VGPU': 1}}
        self.assertEqual([frozenset([ROOT])], self.holders(held, query))

    def test_unsuffixed_vgpu_counts_its_child(self):
        query = _query(('', {'VCPU': 2, 'VGPU': 1}))
        held = {ROOT: {'VCPU': 2}, CHILD: {'VGPU': 1}}
        self.assertEqual([frozenset([ROOT, CHILD])],
                         self.holders(held, query))

    def test_allocations_no_group_asked_for_are_ignored(self):
        # A port's bandwidth, not in the flavor's query.
        held = {ROOT: {'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 10},
                CHILD: {'NET_BW_EGR_KILOBIT_PER_SEC': 1000}}
        self.assertEqual([frozenset([ROOT])], self.holders(held))

    def test_shared_class_split_by_amount(self):
        # Group 1 asks for 4 VCPU: only CHILD holds 4, so ROOT's 2 are the
        # unsuffixed group's.
        query = _query(('', {'VCPU': 2}), ('1', {'VCPU': 4}))
        held = {ROOT: {'VCPU': 2}, CHILD: {'VCPU': 4}}
        self.assertEqual([frozenset([ROOT])], self.holders(held, query))

    def test_shared_class_on_one_provider(self):
        query = _query(('', {'VCPU': 2}), ('1', {'VCPU': 4}))
        held = {ROOT: {'VCPU': 6}}
        self.assertEqual([frozenset([ROOT])], self.holders(held, query))

    def test_ambiguous_split(self):
        query = _query(('', {'VCPU': 2}), ('1', {'VCPU': 2}))
        held = {ROOT: {'VCPU': 2}, CHILD: {'VCPU': 2}}
        self.assertEqual([frozenset([CHILD]), frozenset([ROOT])],
                         self.holders(held, query))

    def test_unexplained_allocations(self):
        query = _query(('', {'VCPU': 2}), ('1', {'VCPU': 8}))
        held = {ROOT: {'VCPU': 2}, CHILD: {'VCPU': 4}}
        self.assertEqual([], self.holders(held, query))
        self.assertEqual(
            'no split of the allocations between the numbered groups '
            'leaves a provider serving the unsuffixed group (VCPU): the '
            'allocations are not those of this flavor',
            held_providers.no_split_detail(held, query))

    def test_why_the_split_was_not_searched(self):
        many = _query(('', {'VCPU': 1}), *[
            (str(i), {'VCPU': 1}) for i in range(1, 8)])
        held = {ROOT: {'VCPU': 8}}
        self.assertEqual([], self.holders(held, many))
        self.assertIn('not searched: 7 numbered groups ask for classes of '
                      'the unsuffixed group, more than 6',
                      held_providers.no_split_detail(held, many))
        wide = _query(('', {'VCPU': 1}), *[
            (str(i), {'VCPU': 1}) for i in range(1, 7)])
        held = {'rp-%d' % i: {'VCPU': 7} for i in range(5)}
        self.assertEqual([], self.holders(held, wide))
        self.assertIn('not searched: 15625 ways to place the numbered '
                      'groups, more than 4096',
                      held_providers.no_split_detail(held, wide))


def _request(query=PLAIN):
    return nit_request.RebuildRequest(
        instance_uuid=fakes.INSTANCE, compute_node_uuid=ROOT,
        image_properties={}, resources=query)


def _session(held, traits):
    bodies = {(ALLOCATIONS, ()): {'allocations': {
        rp: {'resources': res} for rp, res in held.items()}}}
    for rp, names in traits.items():
        bodies[(_traits(rp), ())] = {'traits': list(names)}
    bodies[TREE] = {'resource_providers': [{'uuid': ROOT}, {'uuid': CHILD}]}
    return fakes.ScriptedSession(bodies)


class HeldProvidersTest(base.TestCase):

    strategy = strategies.load('held_providers')

    def evaluate(self, required, held, traits, query=PLAIN):
        session = _session(held, traits)
        ctx = strategy_base.Context(_request(query), frozenset(required),
                                    session)
        return self.strategy.evaluate(ctx), session

    def test_trait_on_root(self):
        verdict, session = self.evaluate(
            [GOLD], {ROOT: {'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 10}},
            {ROOT: [GOLD]})
        self.assertEqual(decision.ACCEPT, verdict.outcome)
        self.assertEqual((ROOT,), verdict.providers)
        self.assertEqual(2, session.requests)

    def test_trait_on_sharing_pool_holding_the_disk(self):
        verdict, session = self.evaluate(
            [GOLD], {ROOT: {'VCPU': 2, 'MEMORY_MB': 1024},
                     SHARING: {'DISK_GB': 10}},
            {ROOT: [], SHARING: [GOLD, SHARES]})
        self.assertEqual(decision.ACCEPT, verdict.outcome)
        self.assertEqual((ROOT, SHARING), verdict.providers)
        # A sharing provider needs no check of the tree.
        self.assertEqual(3, session.requests)

    def test_root_first_then_stop(self):
        verdict, session = self.evaluate(
            [GOLD], {SHARING: {'DISK_GB': 10},
                     ROOT: {'VCPU': 2, 'MEMORY_MB': 1024}},
            {ROOT: [GOLD], SHARING: []})
        self.assertEqual(decision.ACCEPT, verdict.outcome)
        self.assertEqual(_traits(ROOT), session.calls[1][0])
        self.assertEqual(2, session.requests)

    def test_trait_on_child_serving_only_a_numbered_group(self):
        query = _query(('', {'VCPU': 2}), ('1', {'VGPU': 1}))
        verdict, session = self.evaluate(
            [GOLD], {ROOT: {'VCPU': 2}, CHILD: {'VGPU': 1}},
            {ROOT: [], CHILD: [GOLD]}, query)
        self.assertEqual(decision.REJECT, verdict.outcome)
        self.assertEqual(frozenset([GOLD]), verdict.missing)
        self.assertEqual((ROOT,), verdict.providers)
        self.assertEqual(2, session.requests)

    def test_both_traits_missing_named(self):
        verdict, _s = self.evaluate(
            [GOLD, BLUE], {ROOT: {'VCPU': 2, 'MEMORY_MB': 1024,
                                  'DISK_GB': 10}}, {ROOT: []})
        self.assertEqual(decision.REJECT, verdict.outcome)
        self.assertEqual(frozenset([GOLD, BLUE]), verdict.missing)

    def test_traits_spread_over_the_group(self):
        query = _query(('', {'VCPU': 2, 'VGPU': 1}))
        verdict, session = self.evaluate(
            [GOLD, BLUE], {ROOT: {'VCPU': 2}, CHILD: {'VGPU': 1}},
            {ROOT: [BLUE], CHILD: [GOLD]}, query)
        self.assertEqual(decision.ACCEPT, verdict.outcome)
        # One candidate anchored on the compute node: no tree request.
        self.assertEqual(3, session.requests)

    def test_a_node_holding_nothing_asks_for_the_tree(self):
        query = _query(('', {'VCPU': 2, 'MEMORY_MB': 1024}))
        verdict, session = self.evaluate(
            [GOLD], {CHILD: {'VCPU': 2, 'MEMORY_MB': 1024}},
            {CHILD: [GOLD]}, query)
        self.assertEqual(decision.ACCEPT, verdict.outcome)
        self.assertEqual(3, session.requests)
        self.assertIn(TREE[0], [c[0] for c in session.calls])

    def test_another_compute_node_held_during_a_move_does_not_count(self):
        # An evacuated server whose source host is still down holds its
        # allocations there too; that node's traits say nothing here.
        verdict, session = self.evaluate(
            [GOLD], {ROOT: {'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 10},
                     OTHER: {'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 10}},
            {ROOT: [], OTHER: [GOLD]})
        self.assertEqual(decision.REJECT, verdict.outcome)
        self.assertEqual(frozenset([GOLD]), verdict.missing)
        self.assertEqual(1, [c[0] for c in session.calls].count(TREE[0]))

    def test_no_tree_request_when_the_root_has_everything(self):
        verdict, session = self.evaluate(
            [GOLD], {ROOT: {'VCPU': 2, 'MEMORY_MB': 1024},
                     SHARING: {'DISK_GB': 10}}, {ROOT: [GOLD]})
        self.assertEqual(decision.ACCEPT, verdict.outcome)
        self.assertEqual(2, session.requests)

    def test_no_allocations(self):
        verdict, session = self.evaluate([GOLD], {}, {})
        self.assertEqual(decision.INCONCLUSIVE, verdict.outcome)
        self.assertEqual(1, session.requests)

    def test_nothing_serves_the_unsuffixed_group(self):
        verdict, _s = self.evaluate(
            [GOLD], {CHILD: {'NET_BW_EGR_KILOBIT_PER_SEC': 10}}, {})
        self.assertEqual(decision.INCONCLUSIVE, verdict.outcome)
        self.assertIn('no provider holds a class the unsuffixed group asks '
                      'for (DISK_GB, MEMORY_MB, VCPU)', verdict.detail)

    def test_ambiguous_split_that_agrees(self):
        query = _query(('', {'VCPU': 2}), ('1', {'VCPU': 2}))
        verdict, _s = self.evaluate(
            [GOLD], {ROOT: {'VCPU': 2}, CHILD: {'VCPU': 2}},
            {ROOT: [GOLD], CHILD: [GOLD]}, query)
        self.assertEqual(decision.ACCEPT, verdict.outcome, verdict.detail)

    def test_ambiguous_split_that_disagrees(self):
        query = _query(('', {'VCPU': 2}), ('1', {'VCPU': 2}))
        verdict, _s = self.evaluate(
            [GOLD], {ROOT: {'VCPU': 2}, CHILD: {'VCPU': 2}},
            {ROOT: [GOLD], CHILD: []}, query)
        self.assertEqual(decision.INCONCLUSIVE, verdict.outcome)
        self.assertIn('2 ways', verdict.detail)

    def test_flavor_query_without_nova(self):
        # The command line has no nova: the flavor gives the query.
        request = nit_request.RebuildRequest(
            instance_uuid=fakes.INSTANCE, compute_node_uuid=ROOT,
            image_properties={}, flavor=nit_flavor.Flavor(
                vcpus=2, memory_mb=1024, root_gb=10,
                extra_specs={'resources1:VGPU': '1'}))
        session = _session({ROOT: {'VCPU': 2}, CHILD: {'VGPU': 1}},
                           {ROOT: [], CHILD: [GOLD]})
        verdict = self.strategy.evaluate(strategy_base.Context(
            request, frozenset([GOLD]), session))
        self.assertEqual(decision.REJECT, verdict.outcome)

    def test_malformed_allocations(self):
        for body in ({'allocations': []},
                     {'allocations': {ROOT: {'resources': []}}},
                     {'allocations': {ROOT: {'resources': {'VCPU': '2'}}}}):
            session = fakes.ScriptedSession({(ALLOCATIONS, ()): body})
            ctx = strategy_base.Context(_request(), frozenset([GOLD]),
                                        session)
            self.assertRaises(exception.PlacementMalformedResponse,
                              self.strategy.evaluate, ctx)

    def test_provider_gone(self):
        session = _session({ROOT: {'VCPU': 2}}, {})
        session.bodies[(_traits(ROOT), ())] = exception.PlacementBadResponse(
            url=_traits(ROOT), status=404, why='gone')
        ctx = strategy_base.Context(_request(), frozenset([GOLD]), session)
        err = self.assertRaises(exception.PlacementProviderNotFound,
                                self.strategy.evaluate, ctx)
        self.assertEqual('provider-not-found', err.cause)
