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
"""Image trait extraction and trait name validation."""

import re

import hypothesis
from hypothesis import strategies as st
import os_traits

from nova_image_traits import traits
from tests.unit import base

AVX2 = 'HW_CPU_X86_AVX2'
GOLD = 'CUSTOM_GOLD'
_LEGAL = re.compile(r'[A-Z0-9_]+')


class ImageTraitsShapesTest(base.TestCase):

    def test_glance_flat_dict(self):
        image = {'id': 'i', 'os_distro': 'ubuntu',
                 'trait:' + AVX2: 'required', 'trait:' + GOLD: 'required'}
        got = traits.image_traits(image)
        self.assertEqual(frozenset([AVX2, GOLD]), got.required)
        self.assertEqual((), got.invalid)
        self.assertEqual((), got.ignored)

    def test_dict_with_properties(self):
        image = {'id': 'i', 'name': 'trait:nope',
                 'properties': {'trait:' + GOLD: 'required',
                                'hw_disk_bus': 'scsi'}}
        self.assertEqual(frozenset([GOLD]),
                         traits.image_traits(image).required)

    def test_no_image(self):
        for image in (None, {}):
            self.assertEqual(traits.ImageTraits(frozenset(), (), ()),
                             traits.image_traits(image))


class RequiredValueTest(base.TestCase):
    """Nova reads only the exact value ``required``."""

    def test_other_values_are_ignored_and_reported(self):
        image = {'trait:' + GOLD: 'required'}
        others = ['Required', 'REQUIRED', ' required', 'required ',
                  'forbidden', 'true', '1', '']
        for i, value in enumerate(others):
            image['trait:CUSTOM_X%d' % i] = value
        got = traits.image_traits(image)
        self.assertEqual(frozenset([GOLD]), got.required)
        self.assertEqual(
            tuple(sorted('trait:CUSTOM_X%d' % i for i in range(len(others)))),
            got.ignored)
        self.assertEqual((), got.invalid)

    def test_ignored_names_are_not_validated(self):
        got = traits.image_traits({'trait:not valid!': 'forbidden'})
        self.assertEqual(('trait:not valid!',), got.ignored)
        self.assertEqual((), got.invalid)

    def test_non_trait_properties_are_not_reported(self):
        got = traits.image_traits({'traits:' + GOLD: 'required',
                                   'Trait:' + GOLD: 'required',
                                   'hw_trait:' + GOLD: 'required'})
        self.assertEqual(traits.ImageTraits(frozenset(), (), ()), got)


class CheckTraitNameTest(base.TestCase):

    def test_standard_trait(self):
        self.assertIsNone(traits.check_trait_name(AVX2))

    def test_custom_trait(self):
        self.assertIsNone(traits.check_trait_name('CUSTOM_GOLD_2'))

    def test_standard_name_unknown_to_local_os_traits_passes(self):
        # The placement a cloud runs may ship a newer os-traits than the
        # conductor; placement decides whether the trait exists, and a
        # trait it does not know counts as missing.
        name = 'HW_CPU_X86_NOT_YET_IN_OS_TRAITS'
        self.assertNotIn(name, os_traits.get_traits())
        self.assertIsNone(traits.check_trait_name(name))

    def test_bad_syntax(self):
        for name in ('HW-CPU', 'HW CPU', 'CUSTOM_GOLD\n', 'HW.CPU', 'É'):
            why = traits.check_trait_name(name)
            self.assertIn('upper case letters, digits and underscores', why,
                          name)

    def test_lowercase_gets_upper_case_hint(self):
        why = traits.check_trait_name(AVX2.lower())
        self.assertIn('did you mean %s?' % AVX2, why)

    def test_custom_names_placement_accepts(self):
        # placement's own pattern for custom traits is ^CUSTOM_[A-Z0-9_]+$
        # (placement.schemas.common.CUSTOM_TRAIT_PATTERN), so an operator
        # can create and assign these; an image requiring them is valid.
        for name in ('CUSTOM_A__B', 'CUSTOM__GOLD', 'CUSTOM___'):
            self.assertIsNone(traits.check_trait_name(name), name)

    def test_custom_prefix_alone(self):
        self.assertIsNotNone(traits.check_trait_name('CUSTOM_'))

    def test_custom_lowercase(self):
        why = traits.check_trait_name('CUSTOM_foo')
        self.assertIn('upper case', why)

    def test_empty(self):
        self.assertIsNotNone(traits.check_trait_name(''))
        self.assertIsNotNone(traits.check_trait_name(None))

    def test_length_limit(self):
        self.assertIsNone(traits.check_trait_name('CUSTOM_' + 'A' * 248))
        why = traits.check_trait_name('CUSTOM_' + 'A' * 249)
        self.assertIn('255', why)

    def test_special_characters_rejected(self):
        for char in ['&', '=', ',', '!', '%', '/', '?', '#', '+', ' ', '\t',
                     '\n', '\r', '\x00', '-', '.', ':', '\u00c9', '\u00df',
                     '\u0663', '\uff21', '\u2028']:
            name = 'CUSTOM_A%sB' % char
            self.assertIsNotNone(traits.check_trait_name(name), repr(name))
            got = traits.image_traits({'trait:' + name: 'required'})
            self.assertEqual(frozenset(), got.required, repr(name))
            self.assertEqual(['trait:' + name], [p for p, _w in got.invalid])

    def test_standard_name_with_trailing_newline(self):
        self.assertIsNotNone(traits.check_trait_name(AVX2 + '\n'))

    def test_invalid_are_sorted_and_carry_a_reason(self):
        got = traits.image_traits({'trait:hw_cpu_x86_sse': 'required',
                                   'trait:hw_cpu_x86_avx2': 'required',
                                   'trait:' + GOLD: 'required'})
        self.assertEqual(['trait:hw_cpu_x86_avx2', 'trait:hw_cpu_x86_sse'],
                         [p for p, _w in got.invalid])
        for _prop, why in got.invalid:
            self.assertIn('did you mean', why)
        self.assertEqual(frozenset([GOLD]), got.required)

    @hypothesis.given(st.text())
    def test_any_name_is_legal_or_has_a_reason(self, name):
        why = traits.check_trait_name(name)
        if why is None:
            self.assertIsNotNone(_LEGAL.fullmatch(name), repr(name))
            self.assertLessEqual(len(name), traits.MAX_TRAIT_LENGTH)
        else:
            self.assertIsInstance(why, str)
            self.assertNotEqual('', why)

    @hypothesis.given(st.sampled_from(sorted(os_traits.get_traits())))
    def test_every_standard_trait_is_accepted(self, name):
        self.assertIsNone(traits.check_trait_name(name))

    @hypothesis.given(st.from_regex(r'[A-Z0-9_]{1,248}', fullmatch=True))
    @hypothesis.example('A__B')
    def test_every_legal_custom_name_is_accepted(self, suffix):
        self.assertIsNone(traits.check_trait_name('CUSTOM_' + suffix))


class QuoteTest(base.TestCase):

    def test_control_characters_are_escaped(self):
        shown = traits.quote('trait:A\nINFO forged line\r\x00')
        self.assertNotIn('\n', shown)
        self.assertNotIn('\r', shown)
        self.assertNotIn('\x00', shown)
        self.assertIn('\\n', shown)

    def test_long_text_is_cut(self):
        shown = traits.quote('x' * 1000)
        self.assertLessEqual(len(shown), 80)
        self.assertIn('...', shown)

    def test_short_text_is_kept(self):
        self.assertEqual("'trait:CUSTOM_GOLD'", traits.quote('trait:' + GOLD))

    @hypothesis.given(st.text())
    def test_one_bounded_line(self, text):
        shown = traits.quote(text)
        self.assertLessEqual(len(shown), 80)
        self.assertEqual([shown], shown.splitlines())


class ImageTraitsPropertyTest(base.TestCase):

    @hypothesis.given(st.one_of(
        st.dictionaries(st.text(), st.text()),
        st.dictionaries(st.sampled_from(['trait:' + AVX2, 'trait:' + GOLD,
                                         'trait:', 'trait:custom_x',
                                         'properties', 'id']),
                        st.text()),
        st.builds(lambda d: {'properties': d},
                  st.dictionaries(st.text(), st.text()))))
    def test_never_raises_and_partitions_trait_properties(self, image):
        got = traits.image_traits(image)
        flat = dict(image)
        nested = flat.pop('properties', None)
        if isinstance(nested, dict):
            flat.update(nested)
        keys = [k for k in flat if k.startswith('trait:')]
        seen = (['trait:' + n for n in got.required] +
                [p for p, _w in got.invalid] + list(got.ignored))
        self.assertEqual(sorted(keys), sorted(seen))
        for name in got.required:
            self.assertEqual('required', flat['trait:' + name])
            self.assertIsNone(traits.check_trait_name(name))
        for prop in got.ignored:
            self.assertNotEqual('required', flat[prop])
