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
"""Requirements, their rules and the reasons users read."""

from nova_image_traits import listing
from nova_image_traits.reasons import lists
from nova_image_traits import requirements as reqs
from nova_image_traits import sources
from tests.unit import base

TPM = reqs.Requirement('COMPUTE_SECURITY_TPM_2_0',
                       sources=('hw_tpm_version=2.0',),
                       via=reqs.RESOURCE_REQUEST)
SCSI = reqs.Requirement('COMPUTE_STORAGE_BUS_SCSI', reqs.ROOT,
                        sources=('hw_disk_bus=scsi',),
                        via='transform_image_metadata')
NO_HT = reqs.Requirement('HW_CPU_HYPERTHREADING', forbidden=True,
                         sources=('hw_cpu_thread_policy=isolate',),
                         via=reqs.RESOURCE_REQUEST)
AVX2 = reqs.Requirement('HW_CPU_X86_AVX2')


class RequirementTest(base.TestCase):

    def test_equal_whatever_the_source(self):
        self.assertEqual(reqs.Requirement('X', sources=('a=b',), via='f'),
                         reqs.Requirement('X'))
        self.assertNotEqual(reqs.Requirement('X', reqs.ROOT),
                            reqs.Requirement('X'))
        self.assertNotEqual(reqs.Requirement('X', forbidden=True),
                            reqs.Requirement('X'))

    def test_merge_keeps_the_first(self):
        derived = reqs.Requirement('HW_CPU_X86_AVX2', via='f')
        self.assertEqual((AVX2,), reqs.merge([AVX2], [derived]))
        self.assertFalse(reqs.merge([AVX2], [derived])[0].derived)

    def test_unmet(self):
        asked = [TPM, SCSI, NO_HT]
        self.assertEqual([TPM, SCSI], reqs.unmet(asked, set()))
        self.assertEqual([NO_HT], reqs.unmet(
            asked, {TPM.trait, SCSI.trait, NO_HT.trait}))
        self.assertEqual([SCSI], reqs.unmet(asked, {TPM.trait},
                                            scope=reqs.ROOT))

    def test_conflicts_are_per_scope(self):
        wanted = reqs.Requirement('HW_CPU_HYPERTHREADING')
        self.assertEqual([(wanted, NO_HT)], reqs.conflicts([wanted, NO_HT]))
        rooted = reqs.Requirement('HW_CPU_HYPERTHREADING', reqs.ROOT)
        self.assertEqual([], reqs.conflicts([rooted, NO_HT]))

    def test_logged_token_is_quoted(self):
        self.assertEqual(
            'root:COMPUTE_STORAGE_BUS_SCSI<hw_disk_bus=scsi|'
            'transform_image_metadata>', SCSI.logged())
        self.assertEqual('!HW_CPU_HYPERTHREADING<hw_cpu_thread_policy='
                         'isolate|ResourceRequest>', NO_HT.logged())
        hostile = reqs.Requirement('X', sources=('a=b\nINFO forged',
                                                 'c=d'), via='f')
        self.assertEqual('X<a=b%0AINFO%20forged+c=d|f>', hostile.logged())
        self.assertEqual('MEM_ENCRYPTION_CONTEXT:1<hw_mem_encryption=true>',
                         reqs.ResourceNeed('MEM_ENCRYPTION_CONTEXT', 1, (
                             'hw_mem_encryption=true',)).logged())

    def test_derived_is_false_when_empty(self):
        self.assertFalse(reqs.Derived(filters=('f',)))
        self.assertTrue(reqs.Derived(refusal='no'))


class LazySourcesTest(base.TestCase):
    """Sources worked out when first read, once for every requirement."""

    def setUp(self):
        super().setUp()
        self.calls = []

        def find():
            self.calls.append(1)
            return {('X', reqs.ROOT, False): ('hw_disk_bus=scsi',),
                    'MEM_ENCRYPTION_CONTEXT': ('hw_mem_encryption=true',)}
        found = sources.Attribution(find)
        self.scsi = reqs.Requirement('X', reqs.ROOT, sources=sources.Sources(
            found, ('X', reqs.ROOT, False)), via='transform_image_metadata')
        self.other = reqs.Requirement('Y', sources=sources.Sources(
            found, ('Y', reqs.UNSUFFIXED, False)), via='f')
        self.need = reqs.ResourceNeed('MEM_ENCRYPTION_CONTEXT', 1,
                                      sources.Sources(
                                          found, 'MEM_ENCRYPTION_CONTEXT'))

    def test_logged_without_attribution_finds_nothing(self):
        self.assertEqual('root:X<-|transform_image_metadata>',
                         self.scsi.logged(attribute=False))
        self.assertEqual('MEM_ENCRYPTION_CONTEXT:1<->',
                         self.need.logged(attribute=False))
        self.assertEqual('<not attributed>', repr(self.scsi.sources))
        self.assertEqual(self.scsi, reqs.Requirement('X', reqs.ROOT))
        self.assertEqual([], self.calls)

    def test_found_once_on_first_read(self):
        self.assertEqual('root:X<hw_disk_bus=scsi|transform_image_metadata>',
                         self.scsi.logged())
        self.assertEqual(('hw_disk_bus=scsi',), self.scsi.sources)
        self.assertEqual((), self.other.sources)
        self.assertEqual('the new image', self.other.cause())
        self.assertEqual('hw_mem_encryption=true', self.need.cause())
        # Once known, a line without attribution names them too.
        self.assertEqual('root:X<hw_disk_bus=scsi|transform_image_metadata>',
                         self.scsi.logged(attribute=False))
        self.assertEqual([1], self.calls)

    def test_the_command_line_finds_them_at_once(self):
        derived = reqs.Derived(traits=(self.scsi,), resources=(self.need,))
        self.assertIs(derived, derived.attributed())
        self.assertEqual([1], self.calls)
        self.assertTrue(self.scsi.sources.known)


class ReasonTest(base.TestCase):

    def test_one_requirement_names_its_property(self):
        self.assertEqual(
            'hw_tpm_version=2.0 needs COMPUTE_SECURITY_TPM_2_0: missing on '
            "this server's compute node. Rebuild with another image, or "
            'create a new server with this one.',
            lists.requirement_reason(
                [TPM], "missing on this server's compute node"))

    def test_forbidden_and_image_traits(self):
        reason = lists.requirement_reason([NO_HT, AVX2], 'not met')
        self.assertTrue(reason.startswith(
            'hw_cpu_thread_policy=isolate forbids HW_CPU_HYPERTHREADING; '
            'the new image requires HW_CPU_X86_AVX2: not met.'), reason)

    def test_many_fit_the_fault_column(self):
        many = [reqs.Requirement('CUSTOM_LONG_TRAIT_NAME_%02d' % i,
                                 sources=('hw_property_%02d=value' % i,),
                                 via='f') for i in range(20)]
        reason = lists.requirement_reason(many, 'missing on it')
        self.assertTrue(listing.fits(reason), reason)
        self.assertRegex(reason, r' and \d+ more: missing on it\.')

    def test_resources(self):
        need = reqs.ResourceNeed('MEM_ENCRYPTION_CONTEXT', 1,
                                 ('hw_mem_encryption=true',))
        reason = lists.resource_reason([need])
        self.assertEqual(
            'hw_mem_encryption=true needs MEM_ENCRYPTION_CONTEXT: this server '
            'does not hold it, and a rebuild keeps the resources it holds. '
            'Create a new server with this image instead.', reason)
        self.assertTrue(listing.fits(reason))

    def test_cut(self):
        self.assertEqual('short', listing.cut('short'))
        cut = listing.cut('é' * 300)
        self.assertTrue(listing.fits(cut))
        self.assertTrue(cut.endswith('...'))
