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
"""engine.decide: outcomes, fallbacks, placement faults and the log line.
"""

from unittest import mock

import fixtures
from keystoneauth1 import exceptions as ks_exc

from nova_image_traits import decision
from nova_image_traits import engine
from nova_image_traits import flavor as nit_flavor
from nova_image_traits import listing
from nova_image_traits import placement
from nova_image_traits.reasons import lists
from nova_image_traits.reasons import wording
from nova_image_traits import request as nit_request
from nova_image_traits import requirements as nit_requirements
from tests.unit import base
from tests.unit import fakes

ROOT = fakes.ROOT
GOLD = 'CUSTOM_GOLD'
AVX2 = 'HW_CPU_X86_AVX2'
IMAGE = {'trait:' + GOLD: 'required'}
AC = '/allocation_candidates'
ROOT_TRAITS = '/resource_providers/%s/traits' % ROOT
ALLOCATIONS = '/allocations/%s' % fakes.INSTANCE
EMPTY = {'allocation_requests': [], 'provider_summaries': {}}
HELD = {'allocations': {ROOT: {'resources': {'VCPU': 1}}}}
FOUND = {'allocation_requests': [{'allocations': {ROOT: {'resources': {
    'VCPU': 1}}}, 'mappings': {'': [ROOT]}}],
    'provider_summaries': {ROOT: {'resources': {}, 'traits': [GOLD]}}}
PLACEMENT_URL = 'http://placement.example.org:8778'


def _ac(with_traits, without_traits):
    def answer(params):
        return (with_traits if GOLD in dict(params).get('required', '')
                else without_traits)
    return answer


class EngineTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger(
            name=decision.__name__, level='INFO',
            format='%(levelname)s %(name)s %(message)s'))
        patcher = mock.patch.object(placement, 'get_client')
        self.get_client = patcher.start()
        self.addCleanup(patcher.stop)
        # NOTE(founders): the engine's paths are tested with the strategy that
        # has the most of them (inconclusive verdicts, fallbacks, versions).
        self.flags(strategy='in_tree_candidates')

    def decide(self, image=IMAGE, routes=None, flavor=None, **kwargs):
        routes = dict(routes or {})
        routes.setdefault(ALLOCATIONS, HELD)
        self.adapter = fakes.StubAdapter(routes)
        self.client = fakes.StubClient(self.adapter)
        request = nit_request.RebuildRequest(
            instance_uuid=fakes.INSTANCE, compute_node_uuid=ROOT,
            image_properties=image, host='compute-1',
            flavor=flavor or nit_flavor.Flavor(vcpus=1, memory_mb=512,
                                               root_gb=1),
            **kwargs)
        return engine.decide(request, conf=self.conf, client=self.client)


class WithoutPlacementTest(EngineTestCase):

    def _decide_without_client(self, image, flavor=None):
        request = nit_request.RebuildRequest(
            instance_uuid=fakes.INSTANCE, compute_node_uuid=ROOT,
            image_properties=image,
            flavor=flavor or nit_flavor.Flavor(vcpus=1))
        result = engine.decide(request, conf=self.conf)
        self.get_client.assert_not_called()
        self.assertEqual(0, result.requests)
        return result

    def test_invalid_trait(self):
        result = self._decide_without_client(
            {'trait:' + GOLD: 'required', 'trait:custom_silver': 'required'})
        self.assertEqual(decision.REJECT, result.outcome)
        self.assertFalse(result.allowed)
        self.assertEqual('invalid-image-trait', result.cause)
        self.assertIn('trait:custom_silver', result.user_reason())
        self.assertIn('Fix or remove the image property',
                      result.user_reason())

    def test_every_invalid_property_is_named(self):
        image = {'trait:' + GOLD: 'required', 'trait:custom_a': 'required',
                 'trait:custom_b': 'required', 'trait:': 'required'}
        with fixtures.FakeLogger(name='nova_image_traits') as log:
            result = self._decide_without_client(image)
        reason = result.user_reason()
        for prop in ("'trait:custom_a'", "'trait:custom_b'", "'trait:'"):
            self.assertIn(prop, reason)
            self.assertIn(prop, result.detail)
            self.assertIn(prop, log.output)
        self.assertNotIn(GOLD, reason)
        self.assertIn('3 invalid trait properties', result.detail)
        self.assertIn('Fix or remove the image property', reason)

    def test_many_invalid_properties_stay_within_the_fault_column(self):
        image = {'trait:bad_%03d_%s' % (i, 'x' * i): 'required'
                 for i in range(100)}
        result = self._decide_without_client(image)
        reason = result.user_reason()
        # nova's NoValidHost message, as the instance fault records it.
        self.assertLessEqual(len('No valid host was found. ' + reason), 255)
        self.assertIn("'trait:bad_000_'", reason)
        self.assertRegex(reason, r' and \d+ more do not name valid traits')
        shown = reason.count("'trait:bad_")
        self.assertIn(' and %d more ' % (100 - shown), reason)
        self.assertIn('100 invalid trait properties', result.detail)
        self.assertIn('and %d more' % (100 - wording.MAX_LOGGED_INVALID),
                      result.detail)

    def test_invalid_trait_property_is_quoted(self):
        result = self._decide_without_client(
            {'trait:CUSTOM_A\nERROR forged': 'required'})
        self.assertEqual(decision.REJECT, result.outcome)
        self.assertNotIn('\n', result.user_reason())

    def test_no_traits(self):
        result = self._decide_without_client({'os_distro': 'ubuntu',
                                              'trait:' + GOLD: 'forbidden'})
        self.assertEqual(decision.ACCEPT, result.outcome)
        self.assertTrue(result.allowed)
        self.assertIsNone(result.cause)

    def test_too_many_traits(self):
        self.flags(max_image_traits=2)
        image = {'trait:CUSTOM_T%d' % i: 'required' for i in range(3)}
        result = self._decide_without_client(image)
        self.assertEqual(decision.REJECT, result.outcome)
        self.assertEqual('too-many-traits', result.cause)
        self.assertIn('max_image_traits', result.user_reason())

    def test_as_many_traits_as_allowed(self):
        self.flags(max_image_traits=2, strategy='reject')
        image = {'trait:CUSTOM_T%d' % i: 'required' for i in range(2)}
        flavor = nit_flavor.Flavor(extra_specs={
            'trait:CUSTOM_T0': 'required', 'trait:CUSTOM_T1': 'required'})
        result = self.decide(image, flavor=flavor)
        self.assertEqual(decision.ACCEPT, result.outcome)
        self.assertEqual([], self.adapter.calls)

    def test_forbidden_by_flavor(self):
        flavor = nit_flavor.Flavor(vcpus=1, extra_specs={
            'trait:' + GOLD: 'forbidden'})
        result = self._decide_without_client(
            {'trait:' + GOLD: 'required', 'trait:' + AVX2: 'required'},
            flavor=flavor)
        self.assertEqual(decision.REJECT, result.outcome)
        self.assertEqual('forbidden-by-flavor', result.cause)
        self.assertEqual(frozenset([GOLD]), result.missing)
        self.assertTrue(result.user_reason().startswith(
            GOLD + ": required by the new image, forbidden by the server's "
            "flavor."), result.user_reason())

    def test_forbidden_in_a_numbered_group_is_judged_by_placement_rule(self):
        # NOTE(founders): placement checks each request group alone
        # (_check_forbidden): trait1:X=forbidden says nothing of the
        # unsuffixed group, where the image's X goes.
        flavor = nit_flavor.Flavor(vcpus=1, memory_mb=512, extra_specs={
            'resources1:VGPU': '1', 'trait1:' + GOLD: 'forbidden'})
        self.flags(strategy='root_traits')
        result = self.decide(
            {'trait:' + GOLD: 'required'}, flavor=flavor,
            routes={ROOT_TRAITS: {'traits': [GOLD]}})
        self.assertEqual(decision.ACCEPT, result.outcome, result.detail)


class StrategyOutcomeTest(EngineTestCase):

    def test_accept(self):
        result = self.decide(routes={'/': fakes.versions(),
                                     AC: _ac(FOUND, EMPTY)})
        self.assertEqual(decision.ACCEPT, result.outcome)
        self.assertTrue(result.allowed)
        self.assertEqual('in_tree_candidates', result.decided_by)
        self.assertIsNone(result.fallback)
        self.assertEqual(3, result.requests)
        self.assertEqual(frozenset([GOLD]), result.required)
        self.assertEqual((ROOT,), result.providers)

    def test_options_reach_the_client(self):
        self.flags(decision_timeout=3.5, max_url_length=4096,
                   strategy='root_traits')
        self.decide(routes={ROOT_TRAITS: {'traits': [GOLD]}})
        self.assertEqual([(3.5, 4096)], self.client.started)

    def test_reject(self):
        self.flags(strategy='root_traits')
        result = self.decide(routes={ROOT_TRAITS: {'traits': [AVX2]}})
        self.assertEqual(decision.REJECT, result.outcome)
        self.assertFalse(result.allowed)
        self.assertEqual('traits-missing', result.cause)
        self.assertEqual(frozenset([GOLD]), result.missing)
        self.assertEqual(1, result.requests)

    def test_fallback_accepts(self):
        result = self.decide(routes={'/': fakes.versions(),
                                     AC: _ac(EMPTY, EMPTY),
                                     ROOT_TRAITS: {'traits': [GOLD]}})
        self.assertEqual(decision.ACCEPT, result.outcome)
        self.assertTrue(result.allowed)
        self.assertEqual('root_traits', result.fallback)
        self.assertEqual('root_traits', result.decided_by)
        self.assertEqual('in_tree_candidates', result.strategy)
        self.assertEqual(5, result.requests)
        self.assertEqual(['/', ALLOCATIONS, AC, AC, ROOT_TRAITS],
                         self.adapter.paths)
        self.assertIn('root_traits', result.detail)

    def test_fallback_rejects(self):
        result = self.decide(routes={'/': fakes.versions('1.30'),
                                     ROOT_TRAITS: {'traits': []}})
        self.assertEqual(decision.REJECT, result.outcome)
        self.assertEqual('root_traits', result.fallback)
        self.assertEqual(2, result.requests)
        reason = result.user_reason()
        # The traits first, then what the deciding strategy judged; its
        # name is for the log line, not for users.
        self.assertTrue(reason.startswith(GOLD + ': '), reason)
        self.assertIn("missing on this server's compute node", reason)
        self.assertNotIn('root_traits', reason)
        self.assertIn('fallback=root_traits', self.log.output)

    def test_fallback_equal_to_strategy_is_not_run(self):
        self.flags(fallback_strategy='in_tree_candidates')
        result = self.decide(routes={'/': fakes.versions(),
                                     AC: _ac(EMPTY, EMPTY)})
        self.assertEqual(decision.INCONCLUSIVE, result.outcome)
        self.assertFalse(result.allowed)
        self.assertEqual('inconclusive', result.cause)
        self.assertIsNone(result.fallback)
        self.assertEqual(4, result.requests)
        self.assertIn(GOLD, result.user_reason())

    def test_fallback_inconclusive_too(self):
        self.flags(fallback_strategy='allocation_traits')
        result = self.decide(routes={'/': fakes.versions(),
                                     AC: _ac(EMPTY, EMPTY),
                                     ALLOCATIONS: {'allocations': {}}})
        self.assertEqual(decision.INCONCLUSIVE, result.outcome)
        self.assertFalse(result.allowed)
        self.assertEqual('allocation_traits', result.fallback)
        self.assertIn('could not be decided', result.user_reason())
        self.assertNotIn('allocation_traits', result.user_reason())

    def test_query_too_long(self):
        self.flags(max_url_length=512)
        image = {'trait:CUSTOM_%s%d' % ('X' * 90, i): 'required'
                 for i in range(6)}
        result = self.decide(image, routes={'/': fakes.versions()})
        self.assertEqual(decision.REJECT, result.outcome)
        self.assertFalse(result.allowed)
        self.assertEqual('query-too-long', result.cause)
        self.assertEqual(['/'], self.adapter.paths)
        self.assertIn('too many or too long', result.user_reason())


class PlacementErrorTest(EngineTestCase):

    ROUTES = {'/': ks_exc.ConnectFailure(
        'Unable to establish connection to %s/: refused' % PLACEMENT_URL)}

    def test_fail_closed(self):
        result = self.decide(routes=self.ROUTES)
        self.assertEqual(decision.ERROR, result.outcome)
        self.assertFalse(result.allowed)
        self.assertEqual('unreachable', result.cause)
        self.assertEqual(1, result.requests)
        self.assertIn(PLACEMENT_URL, result.detail)
        self.assertIn('unreachable', result.user_reason())
        self.assertNotIn('placement.example.org', result.user_reason())

    def test_fail_open(self):
        self.flags(on_placement_error='accept')
        result = self.decide(routes=self.ROUTES)
        self.assertEqual(decision.ERROR, result.outcome)
        self.assertTrue(result.allowed)
        self.assertEqual('unreachable', result.cause)

    def test_http_error_in_fallback(self):
        result = self.decide(routes={
            '/': fakes.versions('1.30'),
            ROOT_TRAITS: fakes.response(404, {'errors': [
                {'detail': 'No resource provider with uuid %s found' % (
                    ROOT)}]})})
        self.assertEqual(decision.ERROR, result.outcome)
        self.assertEqual('provider-not-found', result.cause)
        self.assertFalse(result.allowed)

    def test_malformed_candidate_is_an_error_not_an_exception(self):
        # decide() promises never to raise for a placement fault.
        body = {'allocation_requests': ['not an object'],
                'provider_summaries': {}}
        result = self.decide(routes={'/': fakes.versions(), AC: body})
        self.assertEqual(decision.ERROR, result.outcome)
        self.assertEqual('malformed-response', result.cause)


class ReasonAndLogTest(EngineTestCase):

    def _lines(self):
        return self.log.output.strip().splitlines()

    def test_one_info_line(self):
        self.flags(strategy='root_traits')
        self.decide(routes={ROOT_TRAITS: {'traits': [AVX2]}})
        lines = self._lines()
        self.assertEqual(1, len(lines), self.log.output)
        line = lines[0]
        self.assertTrue(line.startswith(
            'INFO nova_image_traits.decision Rebuild image traits decision:'),
            line)
        for field in ('outcome=reject', 'allowed=False',
                      'strategy=root_traits', 'fallback=-',
                      'instance=' + fakes.INSTANCE, 'host=compute-1',
                      'node=' + ROOT, 'required=' + GOLD,
                      'missing=' + GOLD, 'providers=' + ROOT, 'requests=1',
                      'cause=traits-missing'):
            self.assertIn(' ' + field + ' ', line)

    def test_one_line_for_hostile_properties(self):
        self.decide(image={'trait:CUSTOM_A\nINFO forged': 'required',
                           'trait:B\n': 'maybe\nnot'})
        self.assertEqual(1, len(self._lines()), self.log.output)

    def test_one_line_for_placement_errors(self):
        self.decide(routes={'/': fakes.response(500, {'errors': [
            {'detail': 'line one\nline two'}]})})
        lines = self._lines()
        self.assertEqual(1, len(lines), self.log.output)
        self.assertIn('outcome=error', lines[0])
        self.assertIn('cause=http-error', lines[0])

    def test_user_reason(self):
        result = self.decide(routes={'/': fakes.versions(),
                                     AC: _ac(EMPTY, FOUND)},
                             image={'trait:' + GOLD: 'required',
                                    'trait:' + AVX2: 'required'})
        self.assertEqual(decision.REJECT, result.outcome)
        self.assertEqual(frozenset([AVX2]), result.missing)
        reason = result.user_reason()
        self.assertIn(AVX2, reason)
        self.assertNotIn(GOLD, reason)
        self.assertIn('missing on the resources this server uses', reason)
        self.assertLessEqual(len(reason), listing.MAX_REASON)
        for part in ('in_tree_candidates', 'allocation_candidates',
                     'in_tree=', '?', 'http', ROOT):
            self.assertNotIn(part, reason)

    def test_image_cannot_choose_the_options(self):
        self.flags(strategy='root_traits')
        mimics = {'image_traits:strategy': 'tree_traits',
                  'image_traits:fallback_strategy': 'tree_traits',
                  'image_traits:on_placement_error': 'accept',
                  'strategy': 'tree_traits', 'on_placement_error': 'accept',
                  'decision_timeout': '0'}
        image = dict(IMAGE, properties=dict(mimics), **mimics)
        result = self.decide(image, routes={ROOT_TRAITS: {'traits': []}})
        self.assertEqual(decision.REJECT, result.outcome)
        self.assertEqual('root_traits', result.strategy)
        self.assertEqual([ROOT_TRAITS], self.adapter.paths)

        result = self.decide(image, routes={ROOT_TRAITS: ks_exc.ConnectFailure(
            'refused')})
        self.assertEqual(decision.ERROR, result.outcome)
        self.assertFalse(result.allowed)


class FailsOpenTest(base.TestCase):

    def test_follows_on_placement_error(self):
        self.assertFalse(engine.fails_open(self.conf))
        self.conf.set_override('on_placement_error', 'accept',
                               group='image_traits')
        self.assertTrue(engine.fails_open(self.conf))

    def test_unreadable_options_fail_closed(self):
        class Broken:
            def __getattr__(self, name):
                raise RuntimeError(name)
        self.assertFalse(engine.fails_open(Broken()))


class UnexpectedFailureTest(EngineTestCase):
    """decide() never raises, and never logs a failure as an accept."""

    def _broken_client(self):
        client = mock.Mock(spec=['start'])
        client.start.side_effect = RuntimeError('boom')
        return client

    def _decide_with(self, client):
        request = nit_request.RebuildRequest(
            instance_uuid=fakes.INSTANCE, compute_node_uuid=ROOT,
            image_properties=IMAGE, host='compute-1')
        return engine.decide(request, conf=self.conf, client=client)

    def test_unexpected_failure_fails_closed(self):
        self.useFixture(fixtures.FakeLogger(name=engine.__name__))
        result = self._decide_with(self._broken_client())
        self.assertEqual(decision.ERROR, result.outcome)
        self.assertFalse(result.allowed)
        self.assertEqual('internal-error', result.cause)
        self.assertIn('RuntimeError: boom', result.detail)
        self.assertIn('outcome=error allowed=False', self.log.output)
        self.assertNotIn('outcome=accept', self.log.output)

    def test_unexpected_failure_follows_on_placement_error(self):
        self.useFixture(fixtures.FakeLogger(name=engine.__name__))
        self.flags(on_placement_error='accept')
        result = self._decide_with(self._broken_client())
        self.assertEqual('internal-error', result.cause)
        self.assertTrue(result.allowed)

    def test_misconfigured_strategy_in_a_file(self):
        path = self.useFixture(fixtures.TempDir()).path + '/nova.conf'
        with open(path, 'w') as f:
            f.write('[image_traits]\nstrategy = in-tree\n')
        self.conf.clear_override('strategy', group='image_traits')
        self.conf(['--config-file', path])
        result = self._decide_with(self._broken_client())
        self.assertEqual('misconfigured', result.cause)
        self.assertFalse(result.allowed)
        self.assertEqual('-', result.strategy)
        self.assertIn('in-tree', result.detail)

    def test_options_are_not_registered_again(self):
        # Registering options clears nova's whole configuration cache.
        with mock.patch.object(engine.nit_conf, 'register_opts') as reg:
            self.decide(image={})
            self.assertFalse(engine.fails_open(self.conf))
        reg.assert_not_called()

    def test_invalid_trait_property_is_quoted_once(self):
        result = self.decide(image={'trait:bad\nname': 'required'})
        self.assertEqual('invalid-image-trait', result.cause)
        self.assertIn("Image property 'trait:bad\\nname' does not name",
                      result.user_reason())
        self.assertNotIn('\\\\', result.user_reason())


class ReasonLengthTest(base.TestCase):
    """What nova stores of a refusal: 255 characters after its prefix."""

    NOVA_PREFIX = 'No valid host was found. '

    def test_bytes_not_characters(self):
        what = 'manquent aux ressources de ce serveur \u00e9\u00e9\u00e9'
        reason = lists.missing_message(
            ['CUSTOM_TRAIT_%02d' % i for i in range(12)], what)
        self.assertLessEqual(len(reason.encode('utf-8')),
                             listing.MAX_REASON)

    def test_fits_nova_fault_column(self):
        for count, length in ((1, 20), (5, 30), (12, 40), (64, 255)):
            names = ['CUSTOM_%s%02d' % ('X' * (length - 9), i)
                     for i in range(count)]
            reason = lists.missing_message(
                names, 'missing on the resources allocated to this server')
            self.assertLessEqual(len(self.NOVA_PREFIX + reason), 255,
                                 (count, length))

    def test_every_trait_named_when_they_fit(self):
        names = ['CUSTOM_GPU_A100', 'CUSTOM_PMEM', 'HW_CPU_X86_AVX512F']
        reason = lists.missing_message(
            names, 'missing on the resources this server uses')
        self.assertTrue(reason.startswith(', '.join(sorted(names)) + ':'))
        self.assertIn('create a new server', reason)

    def test_traits_before_advice_and_counted_when_too_many(self):
        names = ['CUSTOM_TRAIT_NUMBER_%02d' % i for i in range(20)]
        reason = lists.missing_message(
            names, 'missing on the resources this server uses')
        self.assertTrue(reason.startswith('CUSTOM_TRAIT_NUMBER_00, '))
        # Names win over advice.
        self.assertNotIn('create a new server', reason)
        self.assertRegex(reason, r' and \d+ more: required by the new image')
        self.assertLessEqual(len(reason), listing.MAX_REASON)

    def test_a_name_longer_than_the_column_is_cut(self):
        name = 'CUSTOM_' + 'A' * 248
        reason = lists.missing_message([name, 'CUSTOM_B'], 'missing')
        self.assertLessEqual(len(reason), listing.MAX_REASON)
        self.assertTrue(reason.startswith(name[:60]), reason)
        self.assertIn('... and 1 more: required by the new image', reason)


class DerivedRequirementsTest(EngineTestCase):
    """What nova derives from the image, as the engine judges it."""

    SCSI = nit_requirements.Requirement(
        'COMPUTE_STORAGE_BUS_SCSI', nit_requirements.ROOT,
        sources=('hw_disk_bus=scsi weird',), via='transform_image_metadata')
    NEED = nit_requirements.ResourceNeed('MEM_ENCRYPTION_CONTEXT', 1,
                                         ('hw_mem_encryption=true',))

    def setUp(self):
        super().setUp()
        self.flags(strategy='root_traits')

    def test_judged_with_the_image_traits(self):
        result = self.decide(
            routes={ROOT_TRAITS: {'traits': [GOLD]}},
            derived=nit_requirements.Derived(traits=(self.SCSI,)))
        self.assertEqual(decision.REJECT, result.outcome)
        self.assertEqual('judged', result.derived)
        self.assertEqual(frozenset([self.SCSI.trait]), result.missing)
        self.assertEqual((self.SCSI,), result.unmet)
        self.assertTrue(result.user_reason().startswith(
            'hw_disk_bus=scsi weird needs COMPUTE_STORAGE_BUS_SCSI: missing '
            "on this server's compute node."), result.user_reason())

    def test_log_line_lists_every_requirement_without_spaces(self):
        self.decide(routes={ROOT_TRAITS: {'traits': [GOLD]}},
                    derived=nit_requirements.Derived(
                        traits=(self.SCSI,), resources=(self.NEED,)))
        line = self.log.output.strip().splitlines()[-1]
        fields = line.split(' detail=')[0].split(' ')
        self.assertIn(
            'requirements=root:COMPUTE_STORAGE_BUS_SCSI<hw_disk_bus='
            'scsi%20weird|transform_image_metadata>,'
            'CUSTOM_GOLD<trait:CUSTOM_GOLD|image>,'
            'MEM_ENCRYPTION_CONTEXT:1<hw_mem_encryption=true>', fields)
        self.assertIn('derived=judged', fields)

    def test_switched_off(self):
        self.flags(judge_derived_requirements=False)
        result = self.decide(
            routes={ROOT_TRAITS: {'traits': [GOLD]}},
            derived=nit_requirements.Derived(traits=(self.SCSI,)))
        self.assertEqual(decision.ACCEPT, result.outcome)
        self.assertEqual('off', result.derived)
        self.assertEqual((), result.resources)

    def test_unknown_without_nova(self):
        result = self.decide(routes={ROOT_TRAITS: {'traits': [GOLD]}})
        self.assertEqual('unknown', result.derived)
        self.assertEqual(decision.ACCEPT, result.outcome)

    def test_only_derived_requirements(self):
        result = self.decide(
            image={}, routes={ROOT_TRAITS: {'traits': [self.SCSI.trait]}},
            derived=nit_requirements.Derived(traits=(self.SCSI,)))
        self.assertEqual(decision.ACCEPT, result.outcome)
        self.assertEqual(1, result.requests)

    def test_refused_by_a_request_filter(self):
        result = self.decide(derived=nit_requirements.Derived(
            refusal="TPM secret security 'x' is not supported."))
        self.assertEqual(decision.REJECT, result.outcome)
        self.assertEqual('refused-by-request-filter', result.cause)
        self.assertEqual(0, result.requests)
        self.assertEqual("A boot of the new image would be refused: TPM "
                         "secret security 'x' is not supported.",
                         result.user_reason())

    def test_resources_the_server_does_not_hold(self):
        result = self.decide(
            image={}, derived=nit_requirements.Derived(
                resources=(self.NEED,)))
        self.assertEqual(decision.REJECT, result.outcome)
        self.assertEqual('resources-not-held', result.cause)
        self.assertEqual(frozenset(['MEM_ENCRYPTION_CONTEXT']),
                         result.missing)
        self.assertEqual([ALLOCATIONS], self.adapter.paths)

    def test_resources_held_and_nothing_else_asked(self):
        held = {'allocations': {ROOT: {'resources': {
            'VCPU': 1, 'MEM_ENCRYPTION_CONTEXT': 1}}}}
        result = self.decide(
            image={}, routes={ALLOCATIONS: held},
            derived=nit_requirements.Derived(resources=(self.NEED,)))
        self.assertEqual(decision.ACCEPT, result.outcome)
        self.assertEqual([ALLOCATIONS], self.adapter.paths)

    def test_flavor_unsuffixed_forbidden_against_derived(self):
        flavor = nit_flavor.Flavor(vcpus=1, extra_specs={
            'trait:COMPUTE_SECURITY_TPM_2_0': 'forbidden'})
        tpm = nit_requirements.Requirement(
            'COMPUTE_SECURITY_TPM_2_0', sources=('hw_tpm_version=2.0',),
            via=nit_requirements.RESOURCE_REQUEST)
        result = self.decide(image={}, flavor=flavor,
                             derived=nit_requirements.Derived(traits=(tpm,)))
        self.assertEqual('forbidden-by-flavor', result.cause)
        self.assertEqual([], self.adapter.calls)

    def test_resources_unknown_without_allocations(self):
        result = self.decide(
            image={}, routes={ALLOCATIONS: {'allocations': {}}},
            derived=nit_requirements.Derived(resources=(self.NEED,)))
        self.assertEqual(decision.INCONCLUSIVE, result.outcome)
        self.assertEqual('resources-unknown', result.cause)
        self.assertFalse(result.allowed)
        self.assertIn('whether this server holds it could not be decided',
                      result.user_reason())

    def test_resources_of_another_host_do_not_count_mid_move(self):
        other = 'eeeeeeee-0000-4000-8000-000000000009'
        held = {'allocations': {
            ROOT: {'resources': {'VCPU': 1}},
            other: {'resources': {'VCPU': 1, 'MEM_ENCRYPTION_CONTEXT': 1}}}}
        result = self.decide(
            image={}, routes={
                ALLOCATIONS: held,
                '/resource_providers': {'resource_providers': [
                    {'uuid': ROOT}]}},
            derived=nit_requirements.Derived(resources=(self.NEED,)))
        self.assertEqual('resources-not-held', result.cause)
        self.assertEqual([ALLOCATIONS, '/resource_providers'],
                         self.adapter.paths)

    def test_image_in_conflict_with_itself(self):
        ht = nit_requirements.Requirement(
            'HW_CPU_HYPERTHREADING', forbidden=True,
            sources=('hw_cpu_thread_policy=isolate',),
            via=nit_requirements.RESOURCE_REQUEST)
        result = self.decide(image={'trait:HW_CPU_HYPERTHREADING':
                                    'required'},
                             derived=nit_requirements.Derived(traits=(ht,)))
        self.assertEqual('conflicting-requirements', result.cause)
        self.assertEqual([], self.adapter.calls)

    def test_inconclusive_names_forbidden_as_forbidden(self):
        self.flags(strategy='held_providers',
                   fallback_strategy='held_providers')
        ht = nit_requirements.Requirement(
            'HW_CPU_HYPERTHREADING', forbidden=True,
            sources=('hw_cpu_thread_policy=isolate',),
            via=nit_requirements.RESOURCE_REQUEST)
        result = self.decide(image={}, routes={
            ALLOCATIONS: {'allocations': {}}},
            derived=nit_requirements.Derived(traits=(ht,)))
        self.assertEqual(decision.INCONCLUSIVE, result.outcome)
        self.assertTrue(result.user_reason().startswith(
            'hw_cpu_thread_policy=isolate forbids HW_CPU_HYPERTHREADING: '
            'whether this server meets them could not be decided.'),
            result.user_reason())
