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
"""``check`` and ``audit`` judge what nova derives from image properties.

Real nova and placement, as in :mod:`.test_cli_check_audit`. Nova is
importable here, so the commands derive with nova's code; a test makes it
unimportable for the command (:func:`_without_nova`) to show what the
commands say then.
"""

import os
import tempfile
from unittest import mock

from nova_image_traits.cli import derive
from nova_image_traits.conf import image_traits
from tests.functional import test_cli_check_audit as cli_base

VTPM = {'hw_tpm_version': '2.0', 'hw_tpm_model': 'tpm-crb'}
TPM_TRAITS = ['COMPUTE_SECURITY_TPM_2_0', 'COMPUTE_SECURITY_TPM_CRB',
              'COMPUTE_SECURITY_TPM_SECRET_SECURITY_USER']


def _without_nova():
    """Make nova's code unimportable for the command, as on a bare host."""
    def blocked():
        raise ImportError("No module named 'nova'", name='nova')
    return mock.patch.object(derive, '_boot_requirements', blocked)


class CheckDerivedTest(cli_base.CLITestBase):

    def _config(self, text):
        with tempfile.NamedTemporaryFile('w', suffix='.conf',
                                         delete=False) as f:
            f.write(text)
        self.addCleanup(os.unlink, f.name)
        return f.name

    def test_vtpm_refused_naming_the_property(self):
        server = self.boot(self.small, self.glance.image1['id'],
                           host='host1')
        image = self.create_image(**VTPM)

        rc, rows, err = self.cli_json('check', server['id'], '--image',
                                      image, '--strategy', 'all')

        self.assertEqual(3, rc, err)
        self.assertNotIn('not judged', err)
        by = {r['Strategy']: r for r in rows}
        self.assertEqual({'judged'}, {r['Derived'] for r in rows})
        self.assertIn('hw_tpm_version=2.0 -> COMPUTE_SECURITY_TPM_2_0',
                      by['held_providers']['Requirements'])
        self.assertIn('hw_tpm_model=tpm-crb + hw_tpm_version=2.0 -> '
                      'COMPUTE_SECURITY_TPM_CRB',
                      by['held_providers']['Requirements'])
        self.assertEqual('reject', by['held_providers']['Outcome'])
        self.assertIn('hw_tpm_version=2.0 needs COMPUTE_SECURITY_TPM_2_0',
                      by['held_providers']['Reason'])
        # The node's provider is looked up although the image has no
        # trait: property.
        self.assertIn(('GET', '/resource_providers?name=host1'), self.sent)

    def test_vtpm_accepted_on_a_host_with_tpm(self):
        self.set_traits(self.root1, TPM_TRAITS)
        server = self.boot(self.small, self.glance.image1['id'],
                           host='host1')

        rc, rows, err = self.cli_json('check', server['id'], '--image',
                                      self.create_image(**VTPM))

        self.assertEqual(0, rc, err)
        self.assertEqual('accept', rows[0]['Outcome'])

    def test_without_nova_says_it_was_not_judged(self):
        server = self.boot(self.small, self.glance.image1['id'],
                           host='host1')
        image = self.create_image(**VTPM)

        with _without_nova():
            rc, rows, err = self.cli_json('check', server['id'], '--image',
                                          image)

        # Judged on its trait: properties alone, of which it has none.
        self.assertEqual(0, rc, err)
        self.assertEqual('unknown', rows[0]['Derived'])
        self.assertEqual('-', rows[0]['Requirements'])
        lines = [line for line in err.splitlines() if 'not judged' in line]
        self.assertEqual(1, len(lines), err)
        self.assertIn("check: nova is not importable here (ImportError: No "
                      "module named 'nova'): what nova derives from image "
                      "properties (vTPM, secure boot", lines[0])
        self.assertIn('derived=unknown', lines[0])

    def test_disk_bus_follows_the_prefilter_of_nova_conf(self):
        server = self.boot(self.small, self.glance.image1['id'],
                           host='host1')
        image = self.create_image(hw_disk_bus='scsi')

        rc, rows, err = self.cli_json('check', server['id'], '--image',
                                      image)
        self.assertEqual(0, rc, err)
        self.assertEqual('-', rows[0]['Requirements'])

        conf = self._config('[scheduler]\nimage_metadata_prefilter = true\n')
        rc, rows, err = self.cli_json('check', server['id'], '--image',
                                      image, '--config-file', conf)
        self.assertEqual(3, rc, err)
        self.assertIn('hw_disk_bus=scsi -> root:COMPUTE_STORAGE_BUS_SCSI',
                      rows[0]['Requirements'])
        self.assertIn('hw_disk_bus=scsi needs COMPUTE_STORAGE_BUS_SCSI',
                      rows[0]['Reason'])
        # The command's values were nova's for its derivations only.
        import nova.conf
        self.assertFalse(nova.conf.CONF.scheduler.image_metadata_prefilter)

    def test_image_type_without_disk_format_is_not_judged(self):
        # nova's image API, which the commands read here, has no
        # disk_format: the image type is left out, the rest judged.
        server = self.boot(self.small, self.glance.image1['id'],
                           host='host1')
        conf = self._config('[scheduler]\n'
                            'query_placement_for_image_type_support = true\n')

        rc, rows, err = self.cli_json('check', server['id'], '--image',
                                      self.create_image(**VTPM),
                                      '--config-file', conf)

        self.assertEqual(3, rc, err)
        self.assertEqual('judged', rows[0]['Derived'])
        self.assertIn('COMPUTE_SECURITY_TPM_2_0', rows[0]['Requirements'])
        self.assertNotIn('COMPUTE_IMAGE_TYPE', rows[0]['Requirements'])
        self.assertIn('The image properties have no disk_format',
                      self.stdlog.logger.output)

    def test_switched_off_shows_off(self):
        server = self.boot(self.small, self.glance.image1['id'],
                           host='host1')
        conf = self._config('[image_traits]\n'
                            'judge_derived_requirements = false\n')

        rc, rows, err = self.cli_json('check', server['id'], '--image',
                                      self.create_image(**VTPM),
                                      '--config-file', conf)

        self.assertEqual(0, rc, err)
        self.assertEqual('off', rows[0]['Derived'])


class AuditDerivedTest(cli_base.CLITestBase):

    def setUp(self):
        super().setUp()
        # A vTPM server booted while host1 had a TPM, which it lost since.
        self.set_traits(self.root1, TPM_TRAITS)
        self.vtpm = self.boot(self.small, self.create_image(**VTPM),
                              host='host1')
        self.plain = self.boot(self.small, self.glance.image1['id'],
                               host='host1')
        self.set_traits(self.root1, [])

    def test_audit_shows_the_new_refusals(self):
        rc, rows, err = self.cli_json('audit', '--strategy', 'all')

        self.assertEqual(1, rc, err)
        derived = {(r['Server'], r['Strategy']): r['Derived'] for r in rows}
        for name in image_traits.STRATEGIES:
            self.assertEqual('-', derived[self.plain['id'], name])
        # The reject strategy accepts what the server was created with.
        self.assertEqual('met', derived[self.vtpm['id'], 'reject'])
        self.assertEqual('new refusal',
                         derived[self.vtpm['id'], 'held_providers'])
        self.assertIn('2 servers on 1 nodes: 1 failed, 0 skipped; 1 refused '
                      'only with derived requirements', err)

    def test_audit_without_nova(self):
        with _without_nova():
            rc, rows, err = self.cli_json('audit')

        self.assertEqual(0, rc, err)
        self.assertEqual({'unknown'}, {r['Derived'] for r in rows})
        self.assertIn('audit: nova is not importable here', err)
        self.assertIn('0 refused only with derived requirements', err)


class AuditImagesDerivedTest(cli_base.CLITestBase):

    def setUp(self):
        super().setUp()
        self.set_traits(self.root1, ['HW_CPU_X86_AVX2'] + TPM_TRAITS)
        self.vtpm = self.create_image(name='vtpm', **VTPM)
        self.avx2_vtpm = self.create_image(
            required=['HW_CPU_X86_AVX2'], name='avx2-vtpm', **VTPM)
        self.no_smt = self.create_image(name='no-smt',
                                        hw_cpu_thread_policy='isolate')
        self.set_traits(self.root2, ['HW_CPU_X86_AVX2',
                                     'HW_CPU_HYPERTHREADING'])

    def test_images_nova_derives_requirements_from_are_listed(self):
        rc, rows, err = self.cli_json('audit', 'images', 'vtpm', 'avx2-vtpm',
                                      'no-smt')

        self.assertEqual(0, rc, err)
        by = {r['Name']: r for r in rows}
        # Every node has AVX2; only host1 has vTPM.
        self.assertEqual((2, 1, 'yes'), (
            by['avx2-vtpm']['Hosts'], by['avx2-vtpm']['Derived Hosts'],
            by['avx2-vtpm']['Bootable']))
        self.assertIn('hw_tpm_version=2.0 -> COMPUTE_SECURITY_TPM_2_0',
                      by['vtpm']['Derived'])
        self.assertEqual(1, by['vtpm']['Derived Hosts'])
        # host2 has hyperthreading, which the image forbids.
        self.assertEqual('hw_cpu_thread_policy=isolate -> '
                         '!HW_CPU_HYPERTHREADING', by['no-smt']['Derived'])
        self.assertEqual(1, by['no-smt']['Derived Hosts'])

    def test_refused_only_with_derived_requirements(self):
        self.set_traits(self.root1, ['HW_CPU_X86_AVX2'])

        rc, rows, err = self.cli_json('audit', 'images', 'avx2-vtpm')

        self.assertEqual(1, rc, err)
        row, = rows
        self.assertEqual((2, 0, 'no'), (row['Hosts'], row['Derived Hosts'],
                                        row['Bootable']))
        self.assertIn('1 images, 1 not bootable, 1 of them only because of '
                      'derived requirements', err)

    def test_default_lists_images_with_derived_requirements(self):
        rc, rows, err = self.cli_json('audit', 'images')

        names = {r['Name'] for r in rows}
        self.assertLessEqual({'vtpm', 'avx2-vtpm', 'no-smt'}, names)
        # nova's own fake image without properties asks for nothing.
        self.assertNotIn(self.glance.image1['id'], {r['ID'] for r in rows})

    def test_without_nova(self):
        with _without_nova():
            rc, rows, err = self.cli_json('audit', 'images', 'vtpm',
                                          'avx2-vtpm')

        self.assertEqual(0, rc, err)
        self.assertEqual({'unknown'}, {r['Derived'] for r in rows})
        self.assertEqual({'-'}, {r['Derived Hosts'] for r in rows})
        self.assertIn('audit images: nova is not importable here', err)
