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
"""The seams of the decision path: what a boot asks, and how it is worded."""

import inspect

from nova_image_traits import decision as nit_decision
from nova_image_traits import exception
from nova_image_traits import flavor as nit_flavor
from nova_image_traits import isolation
from nova_image_traits import listing
from nova_image_traits import reasons
from nova_image_traits.reasons import isolation as isolation_reasons
from nova_image_traits.reasons import scheduler_filter
from nova_image_traits.reasons import wording
from nova_image_traits import request as nit_request
from nova_image_traits import requirements as reqs
from nova_image_traits import strategies
from tests.unit import base

AVX2 = 'HW_CPU_X86_AVX2'
GOLD = 'CUSTOM_GOLD'
TPM = reqs.Requirement('COMPUTE_SECURITY_TPM_2_0',
                       sources=('hw_tpm_version=2.0',),
                       via=reqs.RESOURCE_REQUEST)
MEM = reqs.ResourceNeed('MEM_ENCRYPTION_CONTEXT', 1,
                        ('hw_mem_encryption=true',))
IMAGE = {'trait:' + AVX2: 'required', 'trait:bad name': 'required',
         'trait:' + GOLD: 'preferred'}
TENANT = ("This server's host does not offer what the new image requires. "
          'Rebuild with another image, or ask your cloud operator.')


class BootAsksTest(base.TestCase):

    def test_off_leaves_what_nova_derives_out(self):
        derived = reqs.Derived(traits=(TPM,), resources=(MEM,),
                               refusal='no')
        asks = reqs.boot_asks(IMAGE, derived, judge=False)
        self.assertEqual('off', asks.derived)
        self.assertEqual((reqs.Requirement(AVX2),), asks.requirements)
        self.assertEqual((), asks.resources)
        self.assertIsNone(asks.refusal)
        self.assertEqual(frozenset([AVX2]), asks.required)
        self.assertEqual(['trait:bad name'],
                         [p for p, _why in asks.image.invalid])
        self.assertEqual(['trait:' + GOLD], list(asks.image.ignored))

    def test_unknown_when_nova_could_not_derive(self):
        asks = reqs.boot_asks(IMAGE, None)
        self.assertEqual('unknown', asks.derived)
        self.assertEqual((reqs.Requirement(AVX2),), asks.requirements)
        self.assertIsNone(asks.refusal)

    def test_judged_merges_each_item_with_its_source(self):
        derived = reqs.Derived(traits=(TPM,), resources=(MEM,))
        asks = reqs.boot_asks(IMAGE, derived)
        self.assertEqual('judged', asks.derived)
        self.assertEqual(tuple(sorted((reqs.Requirement(AVX2), TPM))),
                         asks.requirements)
        by_trait = {r.trait: r for r in asks.requirements}
        self.assertEqual(('hw_tpm_version=2.0',),
                         by_trait[TPM.trait].sources)
        self.assertEqual((MEM,), asks.resources)
        self.assertEqual(frozenset([AVX2, TPM.trait]), asks.required)

    def test_a_request_filters_refusal(self):
        asks = reqs.boot_asks({}, reqs.Derived(refusal='not here'))
        self.assertEqual('judged', asks.derived)
        self.assertEqual('not here', asks.refusal)
        self.assertEqual((), asks.requirements)


class ConflictsTest(base.TestCase):

    def request(self, extra_specs):
        return nit_request.RebuildRequest(
            instance_uuid='i', compute_node_uuid='n', image_properties={},
            flavor=nit_flavor.Flavor(extra_specs=extra_specs))

    def test_the_flavors_forbidden_trait_in_the_same_group(self):
        wanted = reqs.Requirement(AVX2)
        pairs = self.request({'trait:' + AVX2: 'forbidden'}).conflicts(
            (wanted,))
        self.assertEqual(1, len(pairs))
        yes, no = pairs[0]
        self.assertEqual(wanted, yes)
        self.assertEqual(('flavor', ('flavor',), True),
                         (no.via, no.sources, no.forbidden))

    def test_another_request_group_does_not_conflict(self):
        self.assertEqual([], self.request(
            {'trait1:' + AVX2: 'forbidden',
             'resources1:VCPU': '1'}).conflicts((reqs.Requirement(AVX2),)))

    def test_the_images_own_requirements(self):
        no_tpm = reqs.Requirement(TPM.trait, forbidden=True, via='f')
        self.assertEqual([(TPM, no_tpm)],
                         self.request({}).conflicts((TPM, no_tpm)))


def _refused(reason, **kw):
    result = nit_decision.Decision(
        outcome=nit_decision.REJECT, allowed=False, strategy='root_traits',
        **kw)
    (result.cause, result.message, result.detail,
     result.names_host) = reason
    return result


class LogLineTest(base.TestCase):

    def test_log_values_fill_the_line(self):
        result = _refused(
            wording.unmet(strategies.load('root_traits'), (TPM,),
                          frozenset([TPM.trait]), 'root lacks it'),
            instance_uuid='i-1', compute_node_uuid='n-1', host='h1',
            required=frozenset([AVX2, TPM.trait]),
            requirements=(reqs.Requirement(AVX2), TPM), resources=(MEM,),
            derived='judged', missing=frozenset([TPM.trait]),
            providers=('n-1',), requests=2, elapsed=0.0123)
        self.assertEqual(
            'Rebuild image traits decision: outcome=reject allowed=False '
            'strategy=root_traits fallback=- instance=i-1 host=h1 node=n-1 '
            'required=COMPUTE_SECURITY_TPM_2_0,HW_CPU_X86_AVX2 '
            'missing=COMPUTE_SECURITY_TPM_2_0 providers=n-1 requests=2 '
            'known=0 elapsed_ms=12.3 cause=traits-missing derived=judged '
            'requirements=HW_CPU_X86_AVX2<trait:HW_CPU_X86_AVX2|image>,'
            'COMPUTE_SECURITY_TPM_2_0<hw_tpm_version=2.0|ResourceRequest>,'
            'MEM_ENCRYPTION_CONTEXT:1<hw_mem_encryption=true> '
            'detail=root lacks it',
            reasons.LOG_LINE % reasons.log_values(result))


class HostDetailTest(base.TestCase):
    """One decision, worded for each caller."""

    def test_unmet_traits_are_named_only_with_host_detail(self):
        result = _refused(wording.unmet(
            strategies.load('root_traits'), (reqs.Requirement(GOLD),),
            frozenset([GOLD]), 'detail'))
        named = result.reason_for(host_detail=True)
        self.assertTrue(named.startswith(GOLD + ': required by the new '
                                         'image'), named)
        self.assertEqual(named, result.user_reason())
        safe = result.reason_for(host_detail=False)
        self.assertEqual(TENANT, safe)
        self.assertNotIn(GOLD, safe)
        self.assertTrue(listing.fits(safe))

    def test_resources_not_held_are_not_named_without(self):
        result = _refused(wording.resources_not_held(
            (MEM,), {'MEM_ENCRYPTION_CONTEXT': 0}))
        self.assertIn('MEM_ENCRYPTION_CONTEXT',
                      result.reason_for(host_detail=True))
        self.assertEqual(TENANT, result.reason_for(host_detail=False))

    def test_what_the_image_alone_says_reads_the_same(self):
        for reason in (wording.too_many(70, 64),
                       wording.invalid([("'trait:x'", 'lower case')]),
                       wording.refused_by_request_filter('not here'),
                       wording.internal_error(ValueError('boom'))):
            result = _refused(reason)
            self.assertEqual(result.reason_for(host_detail=True),
                             result.reason_for(host_detail=False))
            self.assertEqual(reason.message,
                             result.reason_for(host_detail=False))

    def test_an_acceptance_reads_the_same(self):
        result = nit_decision.Decision(
            outcome=nit_decision.ACCEPT, allowed=True, strategy='reject')
        for host_detail in (True, False):
            self.assertEqual(
                'The rebuild was accepted by image traits strategy reject.',
                result.reason_for(host_detail=host_detail))

    def test_host_detail_is_said_every_time(self):
        result = _refused(wording.too_many(70, 64))
        self.assertRaises(TypeError, result.reason_for)
        self.assertRaises(TypeError, result.reason_for, True)

    def test_the_conductors_own_refusal(self):
        self.assertEqual(
            'The image traits of the new image could not be checked because '
            'of an internal error.', reasons.check_failed())


#: Every wording of :mod:`nova_image_traits.reasons.wording`, with an
#: example, and whether its message names what placement found of the host
#: (then only a caller who may read the host's detail reads it). A new
#: wording fails :class:`WordingClassifiedTest` until it is added here.
_WORDINGS = {
    'misconfigured': (lambda: wording.misconfigured(ValueError('x')), False),
    'internal_error': (lambda: wording.internal_error(ValueError('x')),
                       False),
    'invalid': (lambda: wording.invalid([('trait:bad name', 'no')]), False),
    'refused_by_request_filter': (
        lambda: wording.refused_by_request_filter('not here'), False),
    'too_many': (lambda: wording.too_many(70, 64), False),
    'conflicting': (lambda: wording.conflicting([(
        reqs.Requirement(GOLD),
        reqs.Requirement(GOLD, forbidden=True, via='flavor',
                         sources=('flavor',)))]), False),
    'resources_unknown': (lambda: wording.resources_unknown((MEM,)), False),
    'resources_not_held': (lambda: wording.resources_not_held(
        (MEM,), {'MEM_ENCRYPTION_CONTEXT': 0}), True),
    'query_too_long': (lambda: wording.query_too_long(
        exception.RequestTooLarge(length=9000, limit=8000)), False),
    'placement_failed': (lambda: wording.placement_failed(
        exception.PlacementUnreachable(url='http://p', why='down')), False),
    'unmet': (lambda: wording.unmet(
        strategies.load('root_traits'), (TPM,), frozenset([TPM.trait]),
        'root lacks it'), True),
    'inconclusive': (lambda: wording.inconclusive(
        (reqs.Requirement(GOLD),), frozenset([GOLD]), 'no answer'), False),
    'isolated': (lambda: isolation_reasons.isolated(isolation.Breach(
        {'rp-1': ['agg-1']})), True),
    'refused': (lambda: scheduler_filter.refused(
        'AggregateImagePropertiesIsolation', 'host1', 'node1'), True),
}
#: The modules whose public functions word a refusal.
_WORDING_MODULES = (wording, isolation_reasons, scheduler_filter)


class WordingClassifiedTest(base.TestCase):
    """Each wording says whether it names the host, and is read so."""

    def test_every_wording_is_classified(self):
        public = sorted(
            name for module in _WORDING_MODULES
            for name, func in vars(module).items()
            if inspect.isfunction(func) and not name.startswith('_') and
            func.__module__ == module.__name__)
        self.assertEqual(sorted(_WORDINGS), public)

    def test_each_wording_is_read_as_classified(self):
        for name, (make, names_host) in sorted(_WORDINGS.items()):
            reason = make()
            self.assertIsInstance(reason, wording.Reason, name)
            self.assertEqual(names_host, reason.names_host, name)
            result = _refused(reason)
            safe = result.reason_for(host_detail=False)
            self.assertTrue(listing.fits(safe), name)
            if names_host:
                self.assertEqual(TENANT, safe, name)
                self.assertNotEqual(TENANT,
                                    result.reason_for(host_detail=True),
                                    name)
            else:
                self.assertEqual(reason.message, safe, name)

    def test_the_tenant_reason_names_nothing_unmet(self):
        for name, (make, names_host) in sorted(_WORDINGS.items()):
            if not names_host:
                continue
            reason = make()
            safe = _refused(reason).reason_for(host_detail=False)
            for word in (TPM.trait, 'MEM_ENCRYPTION_CONTEXT',
                         'hw_tpm_version', 'hw_mem_encryption', 'CUSTOM_',
                         'aggregate', 'Aggregate', 'Filter', 'host1'):
                self.assertNotIn(word, safe, name)


class SchedulerFilterReasonTest(base.TestCase):

    def test_the_filter_for_the_admin_the_host_for_the_log(self):
        reason = scheduler_filter.refused('ImagePropertiesFilter', 'host1',
                                          'node1')
        self.assertEqual('refused-by-scheduler-filter', reason.cause)
        self.assertIn('ImagePropertiesFilter', reason.message)
        self.assertNotIn('host1', reason.message)
        self.assertIn('ImagePropertiesFilter refused host host1 (node '
                      'node1)', reason.detail)
        self.assertTrue(listing.fits(scheduler_filter.refused(
            'A' * 300, 'host1', 'node1').message))
