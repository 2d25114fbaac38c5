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
"""A provider's traits, known while placement names their generation."""

from nova_image_traits.placement import known_traits
from tests.unit import base


class _Response:

    def __init__(self, body, status_code=200):
        self.body = body
        self.status_code = status_code

    def json(self):
        if isinstance(self.body, Exception):
            raise self.body
        return self.body


def _traits(traits, generation, status_code=200):
    return _Response({'traits': traits,
                      'resource_provider_generation': generation},
                     status_code)


class KnownTraitsTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.now = 100.0
        self.known = known_traits.KnownTraits(size=2, max_age=300,
                                              clock=lambda: self.now)

    def test_answered_at_its_generation_only(self):
        response = _traits(['CUSTOM_GOLD'], 7)
        self.assertIs(response, self.known.remember('rp', response))
        answer = self.known.answer('rp', 7)
        self.assertTrue(answer.known)
        self.assertEqual(200, answer.status_code)
        self.assertEqual({'traits': ['CUSTOM_GOLD'],
                          'resource_provider_generation': 7}, answer.json())
        # A reader may change what it reads: the kept answer stays.
        answer.json()['traits'].append('X')
        self.assertEqual(['CUSTOM_GOLD'],
                         self.known.answer('rp', 7).json()['traits'])
        self.assertIsNone(self.known.answer('rp', 8))
        self.assertIsNone(self.known.answer('rp', None))
        self.assertIsNone(self.known.answer('other', 7))

    def test_only_placement_s_traits_answers_are_kept(self):
        for response in (_traits(['A'], 1, status_code=404),
                         _Response(ValueError('not JSON')),
                         _Response(['A']),
                         _Response({'traits': ['A']}),
                         _traits('A', 1), _traits([1], 1),
                         _traits(['A'], '1'), _traits(['A'], True)):
            self.assertIs(response, self.known.remember('rp', response))
            self.assertFalse(self.known.knows('rp'))

    def test_never_after_its_age(self):
        self.known.remember('rp', _traits(['A'], 1))
        self.now += 300
        self.assertIsNotNone(self.known.answer('rp', 1))
        self.now += 1
        self.assertIsNone(self.known.answer('rp', 1))
        self.assertFalse(self.known.knows('rp'))

    def test_trait_names_are_shared_between_providers(self):
        # Each provider's answer decodes into strings of its own; kept,
        # they are one string per name, whatever the number of providers.
        for rp in ('a', 'b'):
            self.known.remember(rp, _traits([''.join(['CUSTOM_', 'GOLD'])], 1))
        first, second = (self.known.answer(rp, 1)._traits for rp in 'ab')
        self.assertIs(first[0], second[0])

    def test_the_least_recently_kept_go_first(self):
        for rp in ('a', 'b', 'c'):
            self.known.remember(rp, _traits([], 1))
        self.assertEqual([False, True, True],
                         [self.known.knows(rp) for rp in 'abc'])
        self.known.forget()
        self.assertFalse(self.known.knows('c'))


class HeldGenerationTest(base.TestCase):

    def test_the_generation_of_a_held_provider(self):
        response = _Response({'allocations': {
            'rp': {'generation': 5, 'resources': {'VCPU': 1}}}})
        self.assertEqual(5, known_traits.held_generation(response, 'rp'))
        self.assertIsNone(known_traits.held_generation(response, 'other'))

    def test_none_when_placement_names_none(self):
        for response in (_Response({}, status_code=500),
                         _Response(ValueError('not JSON')),
                         _Response({'allocations': {}}),
                         _Response({'allocations': {'rp': {}}}),
                         _Response({'allocations': {
                             'rp': {'generation': '5'}}}),
                         _Response({'allocations': {
                             'rp': {'generation': False}}})):
            self.assertIsNone(known_traits.held_generation(response, 'rp'))


class ForgetOnNotFoundTest(base.TestCase):

    def test_a_404_forgets_the_provider(self):
        known = known_traits.KnownTraits()
        known.remember('rp', _traits(['A'], 1))
        known.remember('other', _traits(['A'], 1))
        gone = _Response({'errors': []}, status_code=404)
        self.assertIs(gone, known.remember('rp', gone))
        self.assertFalse(known.knows('rp'))
        self.assertTrue(known.knows('other'))
        # Any other failure keeps it.
        known.remember('other', _Response({'errors': []}, status_code=503))
        self.assertTrue(known.knows('other'))
