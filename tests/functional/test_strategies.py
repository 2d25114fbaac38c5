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
"""Every strategy against a real placement (openstack-placement on SQLite).

The matrix below is the strategy table of the design notes
(``shared/design/nova-facts.md``), extended with sharing providers and
traits placement does not know. Each cell is one test; breaking a
strategy's rule fails the cells where it differs from the others.
"""

import os
import uuid

import fixtures
from oslo_config import cfg

from nova_image_traits import conf as nit_conf
from nova_image_traits import decision
from nova_image_traits import engine
from nova_image_traits import flavor as nit_flavor
from nova_image_traits import placement
from nova_image_traits import request as nit_request
from nova_image_traits import strategies
from nova_image_traits.strategies import in_tree_candidates
from tests.functional import base

A = decision.ACCEPT
R = decision.REJECT
STRATEGIES = ('held_providers', 'reject', 'root_traits', 'tree_traits',
              'in_tree_candidates', 'allocation_traits')
TRAIT = 'CUSTOM_IMAGE_NEEDS'

# Where the new image's trait sits -> verdict of each strategy, in the
# order of STRATEGIES. "reject" refuses every trait the server was not
# created with.
# The allocated child serves only the flavor's numbered group 1, so
# held_providers does not count it, as placement would not at boot.
MATRIX = {
    'root': (A, R, A, A, A, A),
    'allocated_child': (R, R, R, A, R, A),
    'unallocated_child': (R, R, R, A, R, R),
    'nowhere': (R, R, R, R, R, R),
    # Placement excludes sharing providers from an in_tree-restricted
    # unsuffixed group, so in_tree_candidates cannot tell and its fallback
    # (root_traits) decides.
    'sharing': (A, R, R, R, R, A),
    # A valid CUSTOM_ name that placement has never heard of.
    'unknown': (R, R, R, R, R, R),
}
FALLBACK_CELLS = {('sharing', 'in_tree_candidates')}

FLAVOR = nit_flavor.Flavor(
    vcpus=1, memory_mb=512, root_gb=1,
    extra_specs={'resources1:CUSTOM_MAGIC': '1'}, name='magic')
SHARED_FLAVOR = nit_flavor.Flavor(vcpus=1, memory_mb=512, root_gb=1,
                                  name='shared-disk')


class StrategyTestBase(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        self.builder.ensure_traits([TRAIT])
        self.conf = self.make_conf()
        self.client = placement.PlacementClient(
            placement.build_adapter(self.conf))
        self.instance = str(uuid.uuid4())

    def make_conf(self):
        """Return a private ConfigOpts whose [placement] reaches the server.

        The options are nova's keystoneauth ones, as in nova.conf.
        """
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'nova.conf')
        with open(path, 'w') as f:
            f.write('[placement]\nauth_type = admin_token\n'
                    'endpoint = %(e)s\ntoken = admin\n'
                    'endpoint_override = %(e)s\n' % {'e': self.endpoint})
        conf = cfg.ConfigOpts()
        nit_conf.register_opts(conf)
        conf(['--config-file', path])
        return conf

    def build_host(self, where, children=0):
        """Build a compute node and allocate the server on it.

        The node has an allocated and a free child, and the trait at
        ``where``. Returns the compute node UUID.
        """
        b = self.builder
        kids = [dict(name='alloc', inventory={'CUSTOM_MAGIC': 4}),
                dict(name='free', inventory={'CUSTOM_MAGIC': 4})]
        kids += [dict(name='extra%d' % i, inventory={'CUSTOM_MAGIC': 1},
                      traits=['CUSTOM_EXTRA'])
                 for i in range(children)]
        shared = where == 'sharing'
        traits = ['HW_CPU_X86_SSE42']
        if where == 'root':
            traits.append(TRAIT)
        node = b.create_compute_node(
            'cn-%s' % uuid.uuid4().hex[:8], vcpus=8, memory_mb=16384,
            disk_gb=0 if shared else 100, traits=traits, children=kids)
        allocs = {node.uuid: {'VCPU': 1, 'MEMORY_MB': 512}}
        if shared:
            agg = str(uuid.uuid4())
            b.add_to_aggregate(node.uuid, agg)
            pool = b.make_sharing_provider(
                'pool-%s' % agg[:8], agg, {'DISK_GB': 1000},
                traits=[TRAIT])
            allocs[pool] = {'DISK_GB': 1}
        else:
            allocs[node.uuid]['DISK_GB'] = 1
            allocs[node.children['alloc']] = {'CUSTOM_MAGIC': 1}
        if where in ('allocated_child', 'unallocated_child'):
            child = node.children[
                'alloc' if where == 'allocated_child' else 'free']
            b.set_traits(child, [TRAIT])
        b.allocate(self.instance, allocs, str(uuid.uuid4()),
                   str(uuid.uuid4()))
        return node.uuid

    def decide(self, node, strategy, trait=TRAIT, flavor=None,
               original=None):
        self.conf.set_override('strategy', strategy, 'image_traits')
        if flavor is None:
            flavor = FLAVOR
        req = nit_request.RebuildRequest(
            instance_uuid=self.instance, compute_node_uuid=node,
            image_properties={'trait:%s' % trait: 'required'},
            flavor=flavor, original_image_properties=original,
            host='test-host')
        return engine.decide(req, conf=self.conf, client=self.client)

    def placement_gets(self):
        return [p for m, p in self.server.recorder
                if m == 'GET' and p != '/']


class TestStrategyMatrix(StrategyTestBase):
    """One test per (trait location, strategy) cell."""


def _make_cell(where, strategy, expected):
    def test(self):
        node = self.build_host(where)
        trait = TRAIT
        if where == 'unknown':
            trait = 'CUSTOM_NEVER_DEFINED_%s' % uuid.uuid4().hex.upper()
        flavor = SHARED_FLAVOR if where == 'sharing' else FLAVOR
        result = self.decide(node, strategy, trait=trait, flavor=flavor)
        self.assertEqual(expected, result.outcome, result.detail)
        self.assertEqual(expected == A, result.allowed)
        if expected == R:
            self.assertEqual({trait}, set(result.missing))
            self.assertIn(trait, result.user_reason())
            # What was judged, for users; the strategy, for the log.
            self.assertIn(strategies.load(result.decided_by).lacks,
                          result.user_reason())
            self.assertNotIn(result.decided_by, result.user_reason())
        expected_fallback = ('root_traits'
                             if (where, strategy) in FALLBACK_CELLS
                             else None)
        self.assertEqual(expected_fallback, result.fallback)
        # Version discovery on first use, then in_tree_candidates' three
        # and its fallback's one.
        self.assertLessEqual(result.requests, 5 if expected_fallback else 4)
    test.__name__ = 'test_%s_%s' % (where, strategy)
    return test


for _where, _row in MATRIX.items():
    for _strategy, _expected in zip(STRATEGIES, _row):
        _test = _make_cell(_where, _strategy, _expected)
        setattr(TestStrategyMatrix, _test.__name__, _test)


class TestStrategyEdges(StrategyTestBase):

    def test_reject_accepts_traits_of_the_current_image(self):
        node = self.build_host('nowhere')
        self.server.reset_recorder()
        result = self.decide(
            node, 'reject',
            original={'trait:%s' % TRAIT: 'required'})
        self.assertEqual(A, result.outcome)
        self.assertEqual(0, result.requests)
        self.assertEqual([], self.placement_gets())

    def test_reject_accepts_traits_the_flavor_required(self):
        node = self.build_host('nowhere')
        fl = nit_flavor.Flavor(vcpus=1, memory_mb=512, root_gb=1,
                               extra_specs={'trait:%s' % TRAIT: 'required'})
        self.assertEqual(A, self.decide(node, 'reject', flavor=fl).outcome)

    def test_forbidden_by_flavor_is_refused_by_every_strategy(self):
        node = self.build_host('root')
        fl = nit_flavor.Flavor(
            vcpus=1, memory_mb=512, root_gb=1,
            extra_specs={'trait:%s' % TRAIT: 'forbidden'})
        self.server.reset_recorder()
        for strategy in STRATEGIES:
            result = self.decide(node, strategy, flavor=fl)
            self.assertEqual(R, result.outcome, strategy)
            self.assertEqual('forbidden-by-flavor', result.cause)
            self.assertIn("forbidden by the server's flavor",
                          result.user_reason())
            self.assertEqual(0, result.requests)
        self.assertEqual([], self.placement_gets())

    def _fill(self, node):
        self.builder.fill(node, 'VCPU')

    def test_full_host_is_not_mistaken_for_missing_traits(self):
        node = self.build_host('root')
        self._fill(node)
        result = self.decide(node, 'in_tree_candidates')
        # Both queries find nothing: inconclusive, so root_traits decides
        # and sees the trait on the root.
        self.assertEqual(A, result.outcome)
        self.assertEqual('root_traits', result.fallback)
        self.assertIn('no room for another boot', result.detail)

    def test_full_host_with_missing_traits_is_refused_by_fallback(self):
        node = self.build_host('nowhere')
        self._fill(node)
        result = self.decide(node, 'in_tree_candidates')
        self.assertEqual(R, result.outcome)
        self.assertEqual('root_traits', result.fallback)
        self.assertEqual({TRAIT}, set(result.missing))

    def test_full_host_other_strategies_unaffected(self):
        node = self.build_host('root')
        self._fill(node)
        for strategy in ('held_providers', 'root_traits', 'tree_traits',
                         'allocation_traits'):
            self.assertEqual(A, self.decide(node, strategy).outcome)

    def test_full_host_held_providers_refuses_missing_traits_itself(self):
        node = self.build_host('nowhere')
        self._fill(node)
        result = self.decide(node, 'held_providers')
        self.assertEqual(R, result.outcome)
        self.assertIsNone(result.fallback)
        self.assertEqual(2, result.requests)

    def test_fallback_inconclusive_too_is_refused(self):
        node = self.build_host('root')
        self._fill(node)
        self.conf.set_override('fallback_strategy', 'in_tree_candidates',
                               'image_traits')
        result = self.decide(node, 'in_tree_candidates')
        self.assertEqual(decision.INCONCLUSIVE, result.outcome)
        self.assertFalse(result.allowed)
        self.assertIn(TRAIT, result.user_reason())


class TestOldPlacement(StrategyTestBase):
    placement_max_microversion = '1.30'

    def setUp(self):
        super().setUp()
        in_tree_candidates._warned.clear()
        self.addCleanup(in_tree_candidates._warned.clear)
        self.log = self.useFixture(fixtures.FakeLogger(
            name='nova_image_traits.strategies.in_tree_candidates'))

    def test_capped_below_1_31_falls_back_with_one_warning(self):
        node = self.build_host('root')
        first = self.decide(node, 'in_tree_candidates')
        second = self.decide(node, 'in_tree_candidates')
        for result in (first, second):
            self.assertEqual(A, result.outcome)
            self.assertEqual('root_traits', result.fallback)
            self.assertIn('older than microversion 1.31', result.detail)
        self.assertEqual(1, self.log.output.count('needs 1.31'))
        # No allocation candidates query was ever sent to old placement.
        self.assertFalse([p for p in self.placement_gets()
                          if p.startswith('/allocation_candidates')])

    def test_capped_below_1_31_missing_trait(self):
        node = self.build_host('allocated_child')
        result = self.decide(node, 'in_tree_candidates')
        self.assertEqual(R, result.outcome)
        self.assertEqual('root_traits', result.fallback)


class TestRequestCounts(StrategyTestBase):
    """Placement requests per decision do not grow with the tree."""

    EXPECTED = {
        # strategy: requests with the trait on the root
        'held_providers': 2,
        'reject': 0,
        'root_traits': 1,
        'tree_traits': 1,
        'in_tree_candidates': 2,
        'allocation_traits': 2,
    }

    def _counts(self, children):
        node = self.build_host('root', children=children)
        # Negotiate the microversion first: once per process, not per
        # decision.
        self.client.max_version(self.client.start(5, 8000))
        counts = {}
        for strategy in STRATEGIES:
            self.server.reset_recorder()
            result = self.decide(node, strategy, original={})
            self.assertEqual(len(self.placement_gets()), result.requests)
            counts[strategy] = result.requests
        return counts

    def test_no_nested_providers(self):
        self.assertEqual(self.EXPECTED, self._counts(0))

    def test_64_nested_providers(self):
        self.assertEqual(self.EXPECTED, self._counts(64))

    def test_trait_on_a_child_stays_within_three(self):
        node = self.build_host('allocated_child', children=64)
        self.client.max_version(self.client.start(5, 8000))
        for strategy in STRATEGIES:
            self.server.reset_recorder()
            result = self.decide(node, strategy)
            self.assertLessEqual(result.requests, 3, strategy)
            self.assertEqual(len(self.placement_gets()), result.requests)


class TestTreeTraitsManyTraits(StrategyTestBase):
    """Several traits the root lacks cost one more request, not one each."""

    TRAITS = ['CUSTOM_ON_CHILD_%d' % i for i in range(3)]

    def _host(self, children_with):
        self.builder.ensure_traits(self.TRAITS)
        node = self.build_host('nowhere', children=8)
        tree = self.placement_request(
            'GET', '/resource_providers?in_tree=%s' % node, '1.14').json()
        kids = sorted(rp['uuid'] for rp in tree['resource_providers']
                      if rp['uuid'] != node)
        for kid, trait in zip(kids, children_with):
            self.builder.set_traits(kid, [trait])
        return node

    def _decide(self, node, traits):
        self.conf.set_override('strategy', 'tree_traits', 'image_traits')
        self.client.max_version(self.client.start(5, 8000))
        self.server.reset_recorder()
        req = nit_request.RebuildRequest(
            instance_uuid=self.instance, compute_node_uuid=node,
            image_properties={'trait:%s' % t: 'required' for t in traits},
            flavor=FLAVOR)
        return engine.decide(req, conf=self.conf, client=self.client)

    def test_traits_on_three_children_in_two_requests(self):
        node = self._host(self.TRAITS)
        result = self._decide(node, self.TRAITS)
        self.assertEqual(A, result.outcome)
        self.assertEqual(2, result.requests)
        self.assertEqual(2, len(self.placement_gets()))
        self.assertEqual(4, len(result.providers))

    def test_one_of_three_missing_in_two_requests(self):
        node = self._host(self.TRAITS[:2])
        result = self._decide(node, self.TRAITS)
        self.assertEqual(R, result.outcome)
        self.assertEqual({self.TRAITS[2]}, set(result.missing))
        self.assertEqual(2, result.requests)

    def test_full_host_asks_trait_by_trait(self):
        node = self._host(self.TRAITS[:2])
        self.builder.fill(node, 'VCPU')
        result = self._decide(node, self.TRAITS)
        self.assertEqual(R, result.outcome)
        self.assertEqual({self.TRAITS[2]}, set(result.missing))
        # root, the empty candidates query, then one query per trait
        self.assertEqual(5, result.requests)
