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
"""Hostile image properties against a real placement.

Image properties are written by any user who can upload an image. Each
entry of :data:`CORPUS` is decided by every strategy, and each decision
must be either a clear rejection that quotes the offending property, or the
correct decision. Then the exact requests that reached placement (the
server's recorder) are checked: GETs only, every target parses cleanly, no
query parameter beyond those the endpoint is asked with, every ``required``
value a valid trait name, and no target longer than
``[image_traits] max_url_length``. No log record of ours may contain a raw
line break or NUL.
"""

import logging
import re
import urllib.parse

import fixtures
import hypothesis
from hypothesis import strategies as st
import os_traits

from nova_image_traits import decision
from nova_image_traits import engine
from nova_image_traits import nova_request
from nova_image_traits import request as nit_request
from nova_image_traits.strategies import in_tree_candidates
from nova_image_traits import traits as nit_traits
from tests.functional import test_strategies

STRATEGIES = test_strategies.STRATEGIES
TRAIT = test_strategies.TRAIT
UUID = r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'
SUFFIX = r'(?:[0-9]+|_[A-Za-z0-9_-]+)?'
#: Endpoint path pattern -> allowed query keys (a pattern, or None).
ENDPOINTS = (
    (re.compile(r'/'), None),
    (re.compile(r'/resource_providers/%s/traits' % UUID), None),
    (re.compile(r'/allocations/%s' % UUID), None),
    (re.compile(r'/resource_providers'), re.compile(r'in_tree|required')),
    (re.compile(r'/traits'), re.compile(r'name')),
    (re.compile(r'/allocation_candidates'),
     re.compile(r'(?:resources|required|in_tree|member_of)%s|limit|'
                r'group_policy' % SUFFIX)),
)
RESOURCES = re.compile(r'[A-Z0-9_]+:[0-9]+(?:,[A-Z0-9_]+:[0-9]+)*')

INVALID = 'invalid'
ABSENT = 'absent'
MISSING = 'missing'
SATISFIED = 'satisfied'
SAME = 'same'

#: Accepted only by strategies that look at placement.
SATISFIED_BY = {'reject': decision.REJECT}


def _req(name, value='required'):
    return {'trait:' + name: value}


#: (label, image properties, expectation). Expectations:
#: INVALID: refused, cause invalid-image-trait, no request;
#: ABSENT: as if the image required no trait: accepted, no request;
#: MISSING: refused by every strategy, cause traits-missing, the trait named;
#: SATISFIED: the trait is on the root: accepted (reject refuses it);
#: SAME: decided exactly as the image with only trait:TRAIT=required.
CORPUS = [
    ('lowercase custom', _req('custom_gpu'), INVALID),
    ('lowercase standard', _req('hw_cpu_x86_sse42'), INVALID),
    ('mixed case', _req('CUSTOM_Gpu'), INVALID),
    # Well-formed names placement does not know: missing, not invalid, so
    # that a trait newer than the local os-traits is never refused.
    ('unknown standard', _req('HW_CPU_X86_AVX9000'), MISSING),
    ('unknown namespace', _req('COMPUTE_DOES_NOT_EXIST'), MISSING),
    ('empty name', _req(''), INVALID),
    ('CUSTOM_ alone', _req('CUSTOM_'), INVALID),
    ('dash', _req('CUSTOM_A-B'), INVALID),
    ('dot', _req('CUSTOM_A.B'), INVALID),
] + [
    ('char %r' % ch, _req('CUSTOM_A%sB' % ch), INVALID)
    for ch in '&=,!%/?#+;:'
] + [
    ('param injection', _req('CUSTOM_A&resources=VCPU:1000'), INVALID),
    ('in_tree injection', _req('CUSTOM_A&in_tree=x'), INVALID),
    ('encoded injection', _req('CUSTOM_A%26limit%3D1000'), INVALID),
    ('forbidden injection', _req('CUSTOM_A,!' + TRAIT), INVALID),
    ('any-of injection', _req('in:CUSTOM_A,CUSTOM_B'), INVALID),
    ('fragment', _req('CUSTOM_A#x'), INVALID),
    ('path traversal', _req('../../resource_providers'), INVALID),
    ('inner space', _req('CUSTOM_A B'), INVALID),
    ('leading space', _req(' ' + TRAIT), INVALID),
    ('trailing space', _req(TRAIT + ' '), INVALID),
    ('tab', _req(TRAIT + '\t'), INVALID),
    ('newline log forging', _req(
        'CUSTOM_A\nINFO nova_image_traits.decision Rebuild image traits '
        'decision: outcome=accept allowed=True'), INVALID),
    ('CRLF header injection', _req('CUSTOM_A\r\nX-Injected: 1'), INVALID),
    ('NUL', _req('CUSTOM_A\x00B'), INVALID),
    ('escape sequence', _req('CUSTOM_A\x1b[2J'), INVALID),
    ('non-ASCII letter', _req('CUSTOM_\u00c9T\u00c9'), INVALID),
    ('sharp s uppercases to SS', _req('CUSTOM_\u00df'), INVALID),
    ('fullwidth letters', _req('CUSTOM_\uff21\uff22'), INVALID),
    ('Arabic-Indic digit', _req('CUSTOM_\u0661'), INVALID),
    ('bidi override', _req('CUSTOM_A\u202eB'), INVALID),
    ('line separator', _req('CUSTOM_A\u2028B'), INVALID),
    ('lone surrogate', _req('CUSTOM_A\udcffB'), INVALID),
    ('256 characters', _req('CUSTOM_' + 'A' * 249), INVALID),
    ('10,000 characters', _req('CUSTOM_' + 'A' * 10000), INVALID),
    ('one bad among good', dict(_req(TRAIT), **_req('CUSTOM_bad')),
     INVALID),
    # Valid names.
    ('valid, on the root', _req(TRAIT), SATISFIED),
    ('valid, unknown to placement', _req('CUSTOM_NEVER_HEARD_OF'), MISSING),
    ('255 characters, unknown', _req('CUSTOM_' + 'A' * 248), MISSING),
    ('underscores only', _req('CUSTOM__'), MISSING),
    ('double underscore', _req('CUSTOM_A__B'), MISSING),
    ('standard, not on the host', _req('COMPUTE_STATUS_DISABLED'),
     MISSING),
] + [
    # nova reads only the exact value "required"; anything else is ignored.
    ('value %r' % (value,), _req('CUSTOM_NEVER_HEARD_OF', value), ABSENT)
    for value in ('Required', 'REQUIRED', 'required ', ' required',
                  'required\n', 'forbidden', 'preferred', '', 'true',
                  'required,required', None, 1, True, ['required'])
] + [
    ('ignored hostile name', _req('custom bad\nname', 'forbidden'), ABSENT),
    ('no trait property', {'hw_cpu_policy': 'dedicated'}, ABSENT),
    ('trait without colon', {'trait' + TRAIT: 'required'}, ABSENT),
    ('traits_required (nova field)', {'traits_required': [TRAIT]}, ABSENT),
    # Properties mimicking our options change nothing.
    ('mimic options', dict(_req(TRAIT), **{
        'image_traits:strategy': 'reject',
        'image_traits:on_placement_error': 'accept',
        'image_traits:max_image_traits': '0',
        'strategy': 'reject', 'fallback_strategy': 'reject',
        'on_placement_error': 'accept', 'decision_timeout': '0',
        'max_url_length': '1'}), SAME),
    ('mimic options nested', {'properties': dict(_req(TRAIT), **{
        'image_traits:strategy': 'root_traits',
        'strategy': 'tree_traits'})}, SAME),
    ('mimic scheduler hint', dict(_req(TRAIT), **{
        '_nova_check_type': ['build'], 'scheduler_hints': 'x'}), SAME),
]


class RecordCollector(logging.Handler):
    """Keep every record's formatted message."""

    def __init__(self):
        super().__init__(level=logging.DEBUG)
        self.messages = []

    def emit(self, record):
        self.messages.append((record.levelname, record.getMessage()))


class HostileTestBase(test_strategies.StrategyTestBase):

    def setUp(self):
        super().setUp()
        self.records = RecordCollector()
        self.useFixture(fixtures.LogHandler(
            self.records, name='nova_image_traits', level=logging.DEBUG,
            nuke_handlers=False))
        self.node = self.build_host('root')
        self.max_url = self.conf.image_traits.max_url_length

    def decide_props(self, props, strategy, image=None):
        """Decide, checking the requests that reached placement."""
        self.conf.set_override('strategy', strategy, 'image_traits')
        req = nit_request.RebuildRequest(
            instance_uuid=self.instance, compute_node_uuid=self.node,
            image_properties=props if image is None else image,
            flavor=test_strategies.FLAVOR, original_image_properties={},
            host='test-host')
        self.server.reset_recorder()
        before = len(self.records.messages)
        result = engine.decide(req, conf=self.conf, client=self.client)
        self.assertRequestsClean(list(self.server.recorder))
        self.assertRecordsClean(self.records.messages[before:], result)
        return result

    def assertRequestsClean(self, records):
        """Only well-formed GETs with expected parameters reached placement."""
        for method, target in records:
            self.assertEqual('GET', method, target)
            self.assertLessEqual(len(target), self.max_url, target[:200])
            self.assertTrue(target.isascii() and target.isprintable(),
                            target)
            parts = urllib.parse.urlsplit(target)
            self.assertEqual(('', '', ''),
                             (parts.scheme, parts.netloc, parts.fragment),
                             target)
            allowed = None
            for path, keys in ENDPOINTS:
                if path.fullmatch(parts.path):
                    allowed = keys
                    break
            else:
                self.fail('unexpected path %r' % parts.path)
            if allowed is None:
                self.assertEqual('', parts.query, target)
                continue
            pairs = urllib.parse.parse_qsl(parts.query, strict_parsing=True)
            keys = [k for k, _v in pairs]
            self.assertEqual(len(keys), len(set(keys)), target)
            for key, value in pairs:
                self.assertTrue(allowed.fullmatch(key), (key, target))
                self.assertTrue(value, (key, target))
                if key.startswith('required'):
                    for name in value.split(','):
                        name = name[1:] if name.startswith('!') else name
                        self.assertIsNone(nit_traits.check_trait_name(name),
                                          (name, target))
                elif key == 'name':
                    self.assertTrue(value.startswith('in:'), value)
                    for name in value[3:].split(','):
                        self.assertIsNone(nit_traits.check_trait_name(name),
                                          (name, target))
                elif key.startswith('in_tree'):
                    self.assertEqual(self.node, value)
                elif key.startswith('resources'):
                    self.assertTrue(RESOURCES.fullmatch(value), value)
                elif key == 'limit':
                    self.assertIn(value, (
                        '1', str(in_tree_candidates.CANDIDATE_LIMIT)))

    def assertRecordsClean(self, messages, result):
        lines = [m for level, m in messages
                 if m.startswith('Rebuild image traits decision:')]
        self.assertEqual(1, len(lines), messages)
        self.assertIn('cause=%s ' % (result.cause or '-'), lines[0])
        for _level, message in messages:
            for bad in ('\n', '\r', '\x00', '\x1b', '\u2028'):
                self.assertNotIn(bad, message)
        for text in (result.user_reason(), result.detail):
            for bad in ('\n', '\r', '\x00', '\x1b', '\u2028'):
                self.assertNotIn(bad, text)


def _flat(props):
    flat = dict(props)
    flat.update(flat.pop('properties', None) or {})
    return flat


def _offending(props):
    """The first invalid trait property, as the engine reports it."""
    wanted = nit_traits.image_traits(props)
    return wanted.invalid[0][0]


class TestHostileCorpus(HostileTestBase):
    """Every corpus entry, every strategy."""

    def _baseline(self, strategy):
        return self.decide_props(_req(TRAIT), strategy)

    def check_entry(self, label, props, expect, strategy):
        msg = '%s / %s' % (label, strategy)
        result = self.decide_props(props, strategy)
        reason = result.user_reason()
        if expect == INVALID:
            self.assertEqual(decision.REJECT, result.outcome, msg)
            self.assertFalse(result.allowed, msg)
            self.assertEqual('invalid-image-trait', result.cause, msg)
            self.assertEqual(0, result.requests, msg)
            self.assertEqual([], self.server.recorder, msg)
            # The offending property is quoted: its printable head shows.
            key = _offending(props)
            head = re.match(r'[A-Za-z0-9_:]*', key).group(0)[:60]
            self.assertIn(head, reason, msg)
            self.assertIn('Fix or remove the image property', reason, msg)
        elif expect == ABSENT:
            self.assertEqual(decision.ACCEPT, result.outcome, msg)
            self.assertTrue(result.allowed, msg)
            self.assertEqual(frozenset(), result.required, msg)
            self.assertEqual(0, result.requests, msg)
            self.assertEqual([], self.server.recorder, msg)
        elif expect == MISSING:
            name = next(iter(nit_traits.image_traits(props).required))
            self.assertEqual(decision.REJECT, result.outcome,
                             (msg, result.cause, result.detail))
            self.assertEqual('traits-missing', result.cause, msg)
            self.assertEqual({name}, set(result.missing), msg)
            self.assertIn(name[:60], reason, msg)
            self.assertLessEqual(result.requests, 3, msg)
        elif expect == SATISFIED:
            self.assertEqual(SATISFIED_BY.get(strategy, decision.ACCEPT),
                             result.outcome, (msg, result.detail))
        elif expect == SAME:
            base = self._baseline(strategy)
            for field in ('outcome', 'allowed', 'cause', 'required',
                          'missing', 'strategy', 'fallback'):
                self.assertEqual(getattr(base, field),
                                 getattr(result, field), (msg, field))
        return result

    def test_corpus_every_strategy(self):
        # Every cell runs; the failures are reported together.
        failures = []
        for label, props, expect in CORPUS:
            for strategy in STRATEGIES:
                try:
                    self.check_entry(label, props, expect, strategy)
                except Exception as e:
                    failures.append('%s / %s: %s' % (
                        label, strategy, str(e)[:300]))
        self.assertEqual([], failures)

    def test_corpus_as_nova_image_meta(self):
        # The scheduler filter and the conductor hook get nova's ImageMeta,
        # which nova parses with the same rule and does not validate; they
        # turn it back into properties (nova_request). Same decisions.
        from nova import objects
        objects.register_all()
        for label, props, expect in CORPUS:
            try:
                meta = objects.ImageMeta.from_dict(
                    {'properties': _flat(props)})
            except Exception:
                # nova itself refuses these properties; nothing to decide.
                continue
            as_dict = self.decide_props(props, 'in_tree_candidates')
            as_meta = self.decide_props(
                nova_request.image_properties_from_image_meta(meta),
                'in_tree_candidates')
            for field in ('outcome', 'allowed', 'cause', 'required',
                          'missing'):
                self.assertEqual(getattr(as_dict, field),
                                 getattr(as_meta, field), (label, field))

    def test_image_meta_without_traits(self):
        # An ImageMeta whose properties never set traits_required requires
        # nothing, through the translation the filter and the hook use.
        from nova import objects
        objects.register_all()
        meta = objects.ImageMeta.from_dict(
            {'properties': {'hw_cpu_policy': 'dedicated'}})
        result = self.decide_props(
            None, 'root_traits',
            image=nova_request.image_properties_from_image_meta(meta))
        self.assertEqual(decision.ACCEPT, result.outcome)
        self.assertEqual(0, result.requests)


class TestManyTraits(HostileTestBase):
    """1,000 valid CUSTOM_ traits on one image."""

    NAMES = ['CUSTOM_HOSTILE_TRAIT_%04d' % i for i in range(1000)]

    def props(self):
        return {'trait:' + n: 'required' for n in self.NAMES}

    def test_refused_by_max_image_traits_without_a_request(self):
        limit = self.conf.image_traits.max_image_traits
        for strategy in STRATEGIES:
            result = self.decide_props(self.props(), strategy)
            self.assertEqual(decision.REJECT, result.outcome, strategy)
            self.assertEqual('too-many-traits', result.cause)
            self.assertEqual(0, result.requests)
            self.assertEqual([], self.server.recorder)
            self.assertIn('1000', result.user_reason())
            self.assertIn(str(limit), result.user_reason())

    def test_over_the_url_limit_is_refused_never_sent(self):
        self.conf.set_override('max_image_traits', 2000, 'image_traits')
        result = self.decide_props(self.props(), 'in_tree_candidates')
        self.assertEqual(decision.REJECT, result.outcome)
        self.assertEqual('query-too-long', result.cause)
        self.assertIn(str(self.max_url), result.user_reason())
        # At most the version document was fetched; the query was not sent.
        self.assertEqual([], [t for _m, t in self.server.recorder
                              if t != '/'])

    def test_other_strategies_decide_within_the_url_limit(self):
        # No trait goes into the URL of root_traits and allocation_traits;
        # reject asks nothing. All see the traits missing.
        self.conf.set_override('max_image_traits', 2000, 'image_traits')
        for strategy in ('reject', 'root_traits', 'allocation_traits'):
            result = self.decide_props(self.props(), strategy)
            self.assertEqual(decision.REJECT, result.outcome, strategy)
            self.assertEqual('traits-missing', result.cause)
            self.assertEqual(set(self.NAMES), set(result.missing))
            self.assertLessEqual(result.requests, 3)
            # The reason names the missing traits; it is long but one line.
            self.assertIn(self.NAMES[0], result.user_reason())

    def test_tree_traits_requests_bounded_by_max_image_traits(self):
        # tree_traits asks once per trait the root lacks: a user controls
        # the count, max_image_traits bounds it.
        limit = self.conf.image_traits.max_image_traits
        props = {'trait:' + n: 'required' for n in self.NAMES[:limit]}
        result = self.decide_props(props, 'tree_traits')
        self.assertEqual(decision.REJECT, result.outcome)
        self.assertEqual(limit, len(result.missing))
        self.assertLessEqual(result.requests, limit + 1)
        self.assertEqual(result.requests, len(self.server.recorder))


valid_names = st.one_of(
    st.sampled_from(sorted(os_traits.get_traits())),
    st.from_regex(r'CUSTOM_[A-Z0-9_]{1,40}', fullmatch=True),
    st.just(TRAIT))
any_names = st.one_of(
    valid_names,
    st.text(max_size=30),
    st.text(alphabet='CUSTOM_AZ09az&=,!%/?#+ \n\x00\u00e9', max_size=20),
    st.tuples(valid_names, st.sampled_from(
        ['&x=1', '=', ',', '!', ' ', '\n', '%2C', '?x=1', '#', '+'])).map(
            ''.join))


class TestHostileProperties(HostileTestBase):
    """Property-based: arbitrary names and values against real placement."""

    def setUp(self):
        super().setUp()
        self.builder.ensure_traits(['CUSTOM_KNOWN_A', 'CUSTOM_KNOWN_B'])

    @hypothesis.settings(max_examples=40, deadline=None, database=None)
    @hypothesis.given(names=st.lists(any_names, min_size=1, max_size=5),
                      strategy=st.sampled_from(STRATEGIES))
    def test_arbitrary_names_never_raise(self, names, strategy):
        props = {'trait:' + n: 'required' for n in names}
        wanted = nit_traits.image_traits(props)
        result = self.decide_props(props, strategy)
        if wanted.invalid:
            self.assertEqual('invalid-image-trait', result.cause)
            self.assertEqual(0, result.requests)
        else:
            self.assertIn(result.outcome,
                          (decision.ACCEPT, decision.REJECT))
            self.assertEqual(wanted.required, result.required)
            self.assertLessEqual(result.missing, result.required)

    @hypothesis.settings(max_examples=40, deadline=None, database=None)
    @hypothesis.given(names=st.sets(valid_names, min_size=1, max_size=8))
    def test_query_carries_exactly_the_image_traits(self, names):
        props = {'trait:' + n: 'required' for n in names}
        result = self.decide_props(props, 'in_tree_candidates')
        self.assertNotEqual(decision.ERROR, result.outcome, result.detail)
        queries = [urllib.parse.urlsplit(t).query
                   for _m, t in self.server.recorder
                   if t.startswith('/allocation_candidates?')]
        self.assertTrue(queries)
        first = dict(urllib.parse.parse_qsl(queries[0],
                                            strict_parsing=True))
        self.assertEqual(set(names), set(first['required'].split(',')))

    @hypothesis.settings(max_examples=40, deadline=None, database=None)
    @hypothesis.given(value=st.one_of(st.text(max_size=12),
                                      st.sampled_from(['required'])))
    def test_only_the_value_required_counts(self, value):
        result = self.decide_props(_req(TRAIT, value), 'root_traits')
        if value == 'required':
            self.assertEqual(frozenset([TRAIT]), result.required)
            self.assertEqual(decision.ACCEPT, result.outcome)
        else:
            self.assertEqual(frozenset(), result.required)
            self.assertEqual(0, result.requests)
