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
"""The five strategies, each against a scripted placement session."""

import fixtures

from nova_image_traits import decision
from nova_image_traits import exception
from nova_image_traits import flavor as nit_flavor
from nova_image_traits import request as nit_request
from nova_image_traits import strategies
from nova_image_traits.strategies import base as strategy_base
from nova_image_traits.strategies import in_tree_candidates
from nova_image_traits.strategies import root_traits
from tests.unit import base
from tests.unit import fakes

ROOT = fakes.ROOT
CHILD = fakes.CHILD
SHARING = fakes.SHARING
GOLD = 'CUSTOM_GOLD'
BLUE = 'CUSTOM_BLUE'
AVX2 = 'HW_CPU_X86_AVX2'
NAMES = ('held_providers', 'reject', 'root_traits', 'tree_traits',
         'in_tree_candidates', 'allocation_traits')
ROOT_TRAITS = ('/resource_providers/%s/traits' % ROOT, ())
ALLOCATIONS = ('/allocations/%s' % fakes.INSTANCE, ())


def _traits_key(uuid):
    return ('/resource_providers/%s/traits' % uuid, ())


def _in_tree_key(trait):
    return ('/resource_providers', (('in_tree', ROOT), ('required', trait)))


def _request(flavor=None, original=None, **kwargs):
    return nit_request.RebuildRequest(
        instance_uuid=fakes.INSTANCE, compute_node_uuid=ROOT,
        image_properties={}, flavor=flavor or nit_flavor.Flavor(
            vcpus=2, memory_mb=1024, root_gb=10),
        original_image_properties=original, **kwargs)


def _ctx(required, session, **kwargs):
    return strategy_base.Context(_request(**kwargs), frozenset(required),
                                 session)


class LoadTest(base.TestCase):

    def test_load_every_strategy(self):
        for name in NAMES:
            strategy = strategies.load(name)
            self.assertIsInstance(strategy, strategy_base.Strategy)
            self.assertEqual(name, strategy.name)
            self.assertTrue(strategy.rule)
            self.assertIs(strategy, strategies.load(name))

    def test_bad_name(self):
        err = self.assertRaises(exception.StrategyNotFound, strategies.load,
                                'accept_everything', 'fallback_strategy')
        self.assertIn("'accept_everything'", err.message)
        self.assertIn('[image_traits] fallback_strategy', err.message)
        self.assertIn(strategies.NAMESPACE, err.message)
        self.assertRaises(exception.StrategyNotFound, strategies.load,
                          'accept_everything')

    def test_plugin_that_fails_to_build(self):
        self.useFixture(fixtures.MockPatchObject(strategies, '_CACHE', {}))
        self.useFixture(fixtures.MockPatchObject(
            root_traits.RootTraitsStrategy, '__init__',
            side_effect=ValueError('boom')))
        err = self.assertRaises(exception.StrategyNotFound, strategies.load,
                                'root_traits')
        self.assertIn("'root_traits'", err.message)
        self.assertIn('ValueError: boom', err.message)
        self.assertIn('[image_traits] strategy', err.message)


class RejectTest(base.TestCase):

    def setUp(self):
        super().setUp()
        # Any request fails the test: this strategy never asks placement.
        self.session = fakes.ScriptedSession()
        self.strategy = strategies.load('reject')

    def _evaluate(self, required, **kwargs):
        verdict = self.strategy.evaluate(
            _ctx(required, self.session, **kwargs))
        self.assertEqual(0, self.session.requests)
        return verdict

    def test_old_image_had_the_traits(self):
        verdict = self._evaluate(
            [GOLD], original={'trait:' + GOLD: 'required'})
        self.assertEqual(decision.ACCEPT, verdict.outcome)

    def test_new_trait_on_known_old_image(self):
        verdict = self._evaluate(
            [GOLD, AVX2], original={'trait:' + AVX2: 'required',
                                    'trait:' + GOLD: 'forbidden'})
        self.assertEqual(decision.REJECT, verdict.outcome)
        self.assertEqual(frozenset([GOLD]), verdict.missing)
        self.assertIn('current image or the flavor', verdict.detail)

    def test_old_image_unknown(self):
        verdict = self._evaluate([GOLD], original=None)
        self.assertEqual(decision.REJECT, verdict.outcome)
        self.assertEqual(frozenset([GOLD]), verdict.missing)
        self.assertIn('not known', verdict.detail)

    def test_flavor_required_traits_count(self):
        flavor = nit_flavor.Flavor(extra_specs={
            'trait:' + AVX2: 'required', 'trait1:' + GOLD: 'required'})
        verdict = self._evaluate([GOLD, AVX2], flavor=flavor)
        self.assertEqual(decision.ACCEPT, verdict.outcome)

    def test_flavor_forbidden_traits_do_not_count(self):
        flavor = nit_flavor.Flavor(extra_specs={'trait:' + GOLD: 'forbidden'})
        verdict = self._evaluate([GOLD], flavor=flavor, original={})
        self.assertEqual(decision.REJECT, verdict.outcome)


class RootTraitsTest(base.TestCase):

    strategy = strategies.load('root_traits')

    def test_root_has_them(self):
        session = fakes.ScriptedSession({ROOT_TRAITS: {'traits': [
            GOLD, AVX2, BLUE]}})
        verdict = self.strategy.evaluate(_ctx([GOLD, AVX2], session))
        self.assertEqual(decision.ACCEPT, verdict.outcome)
        self.assertEqual((ROOT,), verdict.providers)
        self.assertEqual([(ROOT_TRAITS[0], [], '1.6')], session.calls)

    def test_root_lacks_one(self):
        session = fakes.ScriptedSession({ROOT_TRAITS: {'traits': [AVX2]}})
        verdict = self.strategy.evaluate(_ctx([GOLD, AVX2], session))
        self.assertEqual(decision.REJECT, verdict.outcome)
        self.assertEqual(frozenset([GOLD]), verdict.missing)
        self.assertEqual(1, session.requests)

    def test_unknown_root(self):
        session = fakes.ScriptedSession({
            ROOT_TRAITS: exception.PlacementBadResponse(
                url='/x', status=404, why='not found')})
        err = self.assertRaises(exception.PlacementProviderNotFound,
                                self.strategy.evaluate, _ctx([GOLD], session))
        self.assertEqual('provider-not-found', err.cause)
        self.assertIsInstance(err, exception.PlacementBadResponse)
        self.assertEqual('Placement answered GET /x with HTTP 404: not found',
                         err.message)

    def test_server_error_is_kept(self):
        session = fakes.ScriptedSession({
            ROOT_TRAITS: exception.PlacementBadResponse(
                url='/x', status=503, why='down')})
        err = self.assertRaises(exception.PlacementBadResponse,
                                self.strategy.evaluate, _ctx([GOLD], session))
        self.assertEqual(503, err.kwargs['status'])
        self.assertEqual('http-error', err.cause)

    def test_malformed_traits(self):
        session = fakes.ScriptedSession({ROOT_TRAITS: {'traits': GOLD}})
        self.assertRaises(exception.PlacementMalformedResponse,
                          self.strategy.evaluate, _ctx([GOLD], session))


class TreeTraitsTest(base.TestCase):

    strategy = strategies.load('tree_traits')

    def test_on_root_one_request(self):
        session = fakes.ScriptedSession({ROOT_TRAITS: {'traits': [GOLD]}})
        verdict = self.strategy.evaluate(_ctx([GOLD], session))
        self.assertEqual(decision.ACCEPT, verdict.outcome)
        self.assertEqual(1, session.requests)

    def test_on_child(self):
        session = fakes.ScriptedSession({
            ROOT_TRAITS: {'traits': [AVX2]},
            _in_tree_key(GOLD): {'resource_providers': [
                {'uuid': CHILD, 'name': 'child'}]}})
        verdict = self.strategy.evaluate(_ctx([GOLD, AVX2], session))
        self.assertEqual(decision.ACCEPT, verdict.outcome)
        self.assertEqual((ROOT, CHILD), verdict.providers)
        self.assertEqual(2, session.requests)
        self.assertEqual('1.18', session.calls[1][2])

    def _summaries_key(self):
        return ('/allocation_candidates', (
            ('resources', 'DISK_GB:10,MEMORY_MB:1024,VCPU:2'),
            ('in_tree', ROOT), ('limit', '1')))

    def test_several_missing_read_from_tree_summaries(self):
        session = fakes.ScriptedSession({
            ROOT_TRAITS: {'traits': []},
            self._summaries_key(): {
                'allocation_requests': [{'allocations': {ROOT: {}}}],
                'provider_summaries': {
                    ROOT: {'traits': []},
                    CHILD: {'traits': [BLUE]}}}})
        verdict = self.strategy.evaluate(_ctx([GOLD, BLUE], session))
        self.assertEqual(decision.REJECT, verdict.outcome)
        self.assertEqual(frozenset([GOLD]), verdict.missing)
        self.assertEqual((ROOT, CHILD), verdict.providers)
        self.assertEqual(2, session.requests)

    def test_several_missing_on_a_full_host_asked_one_by_one(self):
        session = fakes.ScriptedSession({
            ROOT_TRAITS: {'traits': []},
            self._summaries_key(): {'allocation_requests': [],
                                    'provider_summaries': {}},
            _in_tree_key(GOLD): {'resource_providers': []},
            _in_tree_key(BLUE): {'resource_providers': [{'uuid': CHILD}]}})
        verdict = self.strategy.evaluate(_ctx([GOLD, BLUE], session))
        self.assertEqual(decision.REJECT, verdict.outcome)
        self.assertEqual(frozenset([GOLD]), verdict.missing)
        self.assertEqual(4, session.requests)

    def test_several_missing_on_old_placement_asked_one_by_one(self):
        session = fakes.ScriptedSession({
            ROOT_TRAITS: {'traits': []},
            _in_tree_key(GOLD): {'resource_providers': []},
            _in_tree_key(BLUE): {'resource_providers': [{'uuid': CHILD}]}},
            max_version=(1, 30))
        verdict = self.strategy.evaluate(_ctx([GOLD, BLUE], session))
        self.assertEqual(frozenset([GOLD]), verdict.missing)
        self.assertEqual(3, session.requests)

    def test_malformed_providers(self):
        session = fakes.ScriptedSession({
            ROOT_TRAITS: {'traits': []},
            _in_tree_key(GOLD): {'resource_providers': {}}})
        self.assertRaises(exception.PlacementMalformedResponse,
                          self.strategy.evaluate, _ctx([GOLD], session))


class AllocationTraitsTest(base.TestCase):

    strategy = strategies.load('allocation_traits')

    def _session(self, traits_by_rp):
        bodies = {ALLOCATIONS: {'allocations': {
            uuid: {'resources': {'VCPU': 1}} for uuid in traits_by_rp}}}
        for uuid, names in traits_by_rp.items():
            bodies[_traits_key(uuid)] = {'traits': names}
        return fakes.ScriptedSession(bodies)

    def _consulted(self, session):
        return [path.split('/')[2] for path, _p, _v in session.calls[1:]]

    def test_root_first_and_early_stop(self):
        # CHILD sorts before ROOT; the root is still read first.
        session = self._session({CHILD: [], ROOT: [GOLD]})
        verdict = self.strategy.evaluate(_ctx([GOLD], session))
        self.assertEqual(decision.ACCEPT, verdict.outcome)
        self.assertEqual((ROOT,), verdict.providers)
        self.assertEqual([ROOT], self._consulted(session))
        self.assertEqual(2, session.requests)

    def test_sharing_provider_counts(self):
        session = self._session({ROOT: [AVX2], SHARING: [GOLD], CHILD: []})
        verdict = self.strategy.evaluate(_ctx([GOLD, AVX2], session))
        self.assertEqual(decision.ACCEPT, verdict.outcome)
        # Non-root providers in uuid order: CHILD (0...) then SHARING (a...)
        self.assertEqual((ROOT, CHILD, SHARING), verdict.providers)

    def test_stops_once_everything_is_found(self):
        session = self._session({ROOT: [], CHILD: [GOLD], SHARING: []})
        verdict = self.strategy.evaluate(_ctx([GOLD], session))
        self.assertEqual(decision.ACCEPT, verdict.outcome)
        self.assertEqual([ROOT, CHILD], self._consulted(session))

    def test_missing(self):
        session = self._session({ROOT: [AVX2], CHILD: []})
        verdict = self.strategy.evaluate(_ctx([GOLD, AVX2], session))
        self.assertEqual(decision.REJECT, verdict.outcome)
        self.assertEqual(frozenset([GOLD]), verdict.missing)
        self.assertEqual((ROOT, CHILD), verdict.providers)

    def test_no_allocations_is_inconclusive(self):
        session = fakes.ScriptedSession({ALLOCATIONS: {'allocations': {}}})
        verdict = self.strategy.evaluate(_ctx([GOLD], session))
        self.assertEqual(decision.INCONCLUSIVE, verdict.outcome)
        self.assertEqual(1, session.requests)

    def test_malformed_allocations(self):
        session = fakes.ScriptedSession({ALLOCATIONS: {'allocations': []}})
        self.assertRaises(exception.PlacementMalformedResponse,
                          self.strategy.evaluate, _ctx([GOLD], session))


def _candidate(mappings=None, allocations=(ROOT,)):
    areq = {'allocations': {u: {'resources': {'VCPU': 1}}
                            for u in allocations}}
    if mappings is not None:
        areq['mappings'] = mappings
    return areq


def _candidates(*areqs, **traits_by_rp):
    return {'allocation_requests': list(areqs),
            'provider_summaries': {
                uuid: {'resources': {}, 'traits': names}
                for uuid, names in traits_by_rp.items()}}


EMPTY = _candidates()


def _held(*uuids):
    return {'allocations': {u: {'resources': {'VCPU': 1}} for u in uuids}}


def _with_held(answer, held=(ROOT,)):
    """Answer GET /allocations with ``held``, anything else ``answer``."""
    def route(path, params):
        if path == ALLOCATIONS[0]:
            return _held(*held)
        return answer(path, params)
    return route


class InTreeCandidatesTest(base.TestCase):

    strategy = strategies.load('in_tree_candidates')

    def _by_image_traits(self, with_traits, without_traits, held=(ROOT,),
                         **kwargs):
        """A session answering by whether the query asks for GOLD."""
        def answer(path, params):
            self.assertEqual('/allocation_candidates', path)
            required = dict(params).get('required', '')
            return with_traits if GOLD in required else without_traits
        return fakes.ScriptedSession(default=_with_held(answer, held),
                                     **kwargs)

    def test_candidate_accepts_with_two_requests(self):
        session = self._by_image_traits(
            _candidates(_candidate({'': [ROOT]}), **{ROOT: [GOLD]}), EMPTY)
        verdict = self.strategy.evaluate(_ctx([GOLD], session))
        self.assertEqual(decision.ACCEPT, verdict.outcome)
        self.assertEqual((ROOT,), verdict.providers)
        self.assertEqual(2, session.requests)
        self.assertEqual(ALLOCATIONS[0], session.calls[0][0])

    def test_candidate_on_providers_not_held_does_not_count(self):
        # The trait is on a child the server does not hold: placement finds
        # a candidate there, but a rebuild keeps the server on ROOT.
        with_traits = _candidates(
            _candidate({'': [ROOT, CHILD]}, allocations=(ROOT, CHILD)),
            **{ROOT: [], CHILD: [GOLD]})
        without = _candidates(_candidate({'': [ROOT]}), **{ROOT: []})
        session = self._by_image_traits(with_traits, without)
        verdict = self.strategy.evaluate(_ctx([GOLD], session))
        self.assertEqual(decision.REJECT, verdict.outcome)
        self.assertEqual(frozenset([GOLD]), verdict.missing)
        self.assertEqual(3, session.requests)

    def test_a_held_candidate_after_others_counts(self):
        with_traits = _candidates(
            _candidate({'': [CHILD]}, allocations=(CHILD,)),
            _candidate({'': [ROOT]}), **{ROOT: [GOLD], CHILD: [GOLD]})
        session = self._by_image_traits(with_traits, EMPTY)
        verdict = self.strategy.evaluate(_ctx([GOLD], session))
        self.assertEqual(decision.ACCEPT, verdict.outcome)
        self.assertEqual((ROOT,), verdict.providers)

    def test_no_allocations_is_inconclusive(self):
        session = self._by_image_traits(EMPTY, EMPTY, held=())
        verdict = self.strategy.evaluate(_ctx([GOLD], session))
        self.assertEqual(decision.INCONCLUSIVE, verdict.outcome)
        self.assertEqual(1, session.requests)

    def test_reject_names_traits_missing_from_the_unsuffixed_group(self):
        # BLUE is only on the child, which serves granular group 1: at boot
        # nova's unsuffixed group would not get it either.
        without = _candidates(
            _candidate({'': [ROOT], '1': [CHILD]}, allocations=(ROOT, CHILD)),
            **{ROOT: [AVX2], CHILD: [BLUE]})
        session = self._by_image_traits(EMPTY, without, held=(ROOT, CHILD))
        verdict = self.strategy.evaluate(_ctx([GOLD, BLUE, AVX2], session))
        self.assertEqual(decision.REJECT, verdict.outcome)
        self.assertEqual(frozenset([GOLD, BLUE]), verdict.missing)
        self.assertEqual(3, session.requests)

    def test_reject_without_mappings_uses_every_allocated_provider(self):
        without = _candidates(_candidate(allocations=(ROOT, CHILD)),
                              **{ROOT: [], CHILD: [BLUE]})
        session = self._by_image_traits(EMPTY, without, held=(ROOT, CHILD),
                                        max_version=(1, 33))
        verdict = self.strategy.evaluate(_ctx([GOLD, BLUE], session))
        self.assertEqual(decision.REJECT, verdict.outcome)
        self.assertEqual(frozenset([GOLD]), verdict.missing)

    def test_empty_twice_is_inconclusive(self):
        session = self._by_image_traits(EMPTY, EMPTY)
        verdict = self.strategy.evaluate(_ctx([GOLD], session))
        self.assertEqual(decision.INCONCLUSIVE, verdict.outcome)
        self.assertEqual((ROOT,), verdict.providers)
        self.assertEqual(3, session.requests)
        self.assertIn('no room for another boot', verdict.detail)

    def test_old_placement_is_inconclusive_and_warns_once(self):
        logger = self.useFixture(fixtures.FakeLogger(
            name=in_tree_candidates.__name__, level='WARNING'))
        for _i in range(2):
            session = fakes.ScriptedSession(max_version=(1, 30))
            verdict = self.strategy.evaluate(_ctx([GOLD], session))
            self.assertEqual(decision.INCONCLUSIVE, verdict.outcome)
            self.assertEqual(0, session.requests)
        lines = logger.output.strip().splitlines()
        self.assertEqual(1, len(lines), logger.output)
        self.assertIn('1.30', lines[0])
        self.assertIn('1.31', lines[0])

    def _params(self, flavor, required=(GOLD,), max_version=(1, 39)):
        session = self._by_image_traits(EMPTY, EMPTY,
                                        max_version=max_version)
        self.strategy.evaluate(_ctx(required, session, flavor=flavor))
        return session.calls[1:]

    def test_query(self):
        flavor = nit_flavor.Flavor(
            vcpus=2, memory_mb=1024, root_gb=10, extra_specs={
                'trait:' + AVX2: 'required', 'trait:CUSTOM_RED': 'forbidden',
                'trait:CUSTOM_OLD': 'forbidden'})
        calls = self._params(flavor, required=(GOLD, BLUE))
        first = [('resources', 'DISK_GB:10,MEMORY_MB:1024,VCPU:2'),
                 ('required', ','.join([BLUE, GOLD, AVX2,
                                        '!CUSTOM_OLD', '!CUSTOM_RED'])),
                 ('in_tree', ROOT), ('limit', '1000')]
        second = [('resources', 'DISK_GB:10,MEMORY_MB:1024,VCPU:2'),
                  ('required', AVX2 + ',!CUSTOM_OLD,!CUSTOM_RED'),
                  ('in_tree', ROOT), ('limit', '1000')]
        self.assertEqual([('/allocation_candidates', first, '1.36'),
                          ('/allocation_candidates', second, '1.36')],
                         calls)

    def test_query_version_follows_placement(self):
        calls = self._params(nit_flavor.Flavor(vcpus=1),
                             max_version=(1, 31))
        self.assertEqual(['1.31', '1.31'], [v for _p, _q, v in calls])

    def test_query_one_granular_group_has_no_group_policy(self):
        flavor = nit_flavor.Flavor(vcpus=1, extra_specs={
            'resources1:CUSTOM_MAGIC': '1', 'trait1:' + BLUE: 'required',
            'group_policy': 'isolate'})
        params = self._params(flavor)[0][1]
        self.assertEqual([('resources', 'VCPU:1'), ('required', GOLD),
                          ('in_tree', ROOT),
                          ('resources1', 'CUSTOM_MAGIC:1'),
                          ('required1', BLUE), ('in_tree1', ROOT),
                          ('limit', '1000')], params)

    def test_query_group_policy_with_two_granular_groups(self):
        specs = {'resources1:CUSTOM_MAGIC': '1', 'resources2:VGPU': '1'}
        params = dict(self._params(nit_flavor.Flavor(
            vcpus=1, extra_specs=dict(specs, group_policy='isolate')))[0][1])
        self.assertEqual('isolate', params['group_policy'])
        self.assertEqual(ROOT, params['in_tree2'])
        params = dict(self._params(nit_flavor.Flavor(
            vcpus=1, extra_specs=specs))[0][1])
        self.assertEqual('none', params['group_policy'])

    def test_request_groups_given_by_the_caller_win(self):
        bandwidth = 'NET_BW_EGR_KILOBIT_PER_SEC'
        query = nit_flavor.ResourceQuery(groups=(
            nit_flavor.RequestGroup('', {'VCPU': 4}),
            nit_flavor.RequestGroup('_port', {bandwidth: 1000})))
        session = self._by_image_traits(EMPTY, EMPTY)
        self.strategy.evaluate(_ctx([GOLD], session, resources=query))
        params = session.calls[1][1]
        self.assertEqual(('resources', 'VCPU:4'), params[0])
        self.assertIn(('resources_port', bandwidth + ':1000'), params)

    def test_image_traits_are_never_dropped(self):
        # The unsuffixed group carries the image traits. When it asks for no
        # resources, its traits must not silently vanish from the query,
        # or any candidate "accepts" traits nobody asked placement about.
        query = nit_flavor.ResourceQuery(groups=(
            nit_flavor.RequestGroup(''),
            nit_flavor.RequestGroup('1', {'VCPU': 2})))
        session = fakes.ScriptedSession(default=_with_held(
            lambda path, params: _candidates(_candidate({'1': [ROOT]}),
                                             **{ROOT: []})))
        verdict = self.strategy.evaluate(
            _ctx([GOLD], session, resources=query))
        asked = [q for _p, q, _v in session.calls
                 if any(GOLD in value for _k, value in q)]
        # Nobody asked placement about GOLD: the strategy cannot tell, and
        # says why, rather than accept the candidate placement offers.
        self.assertEqual([], asked)
        self.assertEqual(decision.INCONCLUSIVE, verdict.outcome)
        self.assertIn('carries the image traits, asks for no resources',
                      verdict.detail)

    def test_malformed_candidates(self):
        for body in ({'allocation_requests': {}, 'provider_summaries': {}},
                     {'allocation_requests': [], 'provider_summaries': []},
                     {'provider_summaries': {}}):
            session = fakes.ScriptedSession(
                default=_with_held(lambda p, q: body))
            self.assertRaises(exception.PlacementMalformedResponse,
                              self.strategy.evaluate, _ctx([GOLD], session))

    def test_malformed_allocation_request(self):
        body = {'allocation_requests': ['not an object'],
                'provider_summaries': {}}
        session = fakes.ScriptedSession(default=_with_held(lambda p, q: body))
        self.assertRaises(exception.PlacementMalformedResponse,
                          self.strategy.evaluate, _ctx([GOLD], session))


class InTreeCandidatesLimitTest(base.TestCase):

    strategy = strategies.load('in_tree_candidates')

    def test_a_cut_first_answer_is_inconclusive_not_a_refusal(self):
        others = [_candidate({'': [CHILD]}, allocations=(CHILD,))
                  for _i in range(in_tree_candidates.CANDIDATE_LIMIT)]
        with_traits = _candidates(*others, **{CHILD: [GOLD]})
        without = _candidates(_candidate({'': [ROOT]}), **{ROOT: []})

        def answer(path, params):
            required = dict(params).get('required', '')
            return with_traits if GOLD in required else without
        session = fakes.ScriptedSession(default=_with_held(answer))
        verdict = self.strategy.evaluate(_ctx([GOLD], session))
        self.assertEqual(decision.INCONCLUSIVE, verdict.outcome)
        self.assertIn('at least', verdict.detail)
        self.assertEqual(2, session.requests)
