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
"""The check that nova's own code still derives what a boot asks.

The filter, the hook and the pre-check ask nova's request filters and
``ResourceRequest`` what a boot of the new image asks
(:mod:`nova_image_traits.boot_requirements`). When nova's code fails
there, a decision logs a WARNING and judges the image's ``trait:``
properties alone: a vTPM image would be accepted on a host without a TPM.
So this check tries one derivation through the installed nova, as a
decision does and without the API database, on an image whose
requirements are known, with the two ``[scheduler]`` options that turn on
nova's image prefilters set for the try only. nova is imported inside
:func:`check_derivation`, and only when it is installed.
"""

import logging
import warnings

from oslo_upgradecheck import upgradecheck

from nova_image_traits import requirements

Code = upgradecheck.Code
Result = upgradecheck.Result

#: The image tried: a vTPM, a disk bus and a disk format.
IMAGE = {'disk_format': 'qcow2', 'container_format': 'bare',
         'properties': {'hw_tpm_version': '2.0', 'hw_tpm_model': 'tpm-crb',
                        'hw_disk_bus': 'scsi'}}
#: nova's options that turn on its image prefilters, set for the try.
PREFILTERS = ('image_metadata_prefilter',
              'query_placement_for_image_type_support')
#: What a boot of :data:`IMAGE` asks, ``(trait, root?)``, and its source.
EXPECTED = {('COMPUTE_SECURITY_TPM_2_0', False): 'hw_tpm_version=2.0',
            ('COMPUTE_STORAGE_BUS_SCSI', True): 'hw_disk_bus=scsi',
            ('COMPUTE_IMAGE_TYPE_QCOW2', True): 'disk_format=qcow2'}


class _Warnings(logging.Handler):
    """The WARNING lines of one logger, while it is attached."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def check_derivation():
    """Derive :data:`IMAGE` with nova's code; say whether it still works."""
    try:
        with warnings.catch_warnings():
            # NOTE(founders): nova's futurist imports eventlet, which warns
            # on import that it is deprecated.
            warnings.filterwarnings('ignore',
                                    message='\\s*Eventlet is deprecated')
            from nova import objects
            from nova.scheduler import request_filter

            from nova_image_traits import boot_requirements
    except ImportError as e:
        return Result(Code.SUCCESS, (
            'nova is not installed here, so deriving requirements with its '
            'code cannot be tried (%s).' % e))
    objects.register_all()
    unknown = sorted(
        name for name in (getattr(f, '__name__', repr(f))
                          for f in request_filter.ALL_REQUEST_FILTERS)
        if name not in boot_requirements.IMAGE_FILTERS and
        name not in boot_requirements.NOT_ABOUT_THE_IMAGE)
    try:
        found, why = _derive(objects, boot_requirements)
    except Exception as e:
        found, why = None, '%s: %s' % (type(e).__name__, e)
    if found is None:
        return Result(Code.FAILURE, (
            "nova's code failed to derive what a boot of a vTPM image asks "
            '(%s): rebuilds are judged on their trait: properties alone '
            'until nova-image-traits supports this nova.' % why))
    wrong = ['%s%s from %s' % ('root:' if root else '', trait, source)
             for (trait, root), source in sorted(EXPECTED.items())
             if source not in found.get((trait, root), ())]
    if wrong:
        return Result(Code.FAILURE, (
            "nova's code no longer derives %s for an image with %s: this "
            'nova is not one nova-image-traits supports.' % (
                ', '.join(wrong), ', '.join(
                    sorted('%s=%s' % kv for kv in IMAGE['properties'].items()
                           )))))
    details = ("nova's code derives what a boot of a vTPM image asks, as "
               'expected.')
    if unknown:
        return Result(Code.WARNING, details + (
            ' nova runs request filters nova-image-traits does not know: '
            '%s; what they ask at boot is not judged on rebuild.'
            % ', '.join(unknown)))
    return Result(Code.SUCCESS, details)


def _derive(objects, boot_requirements):
    """``({(trait, root?): sources}, None)``, or ``(None, why)``."""
    flavor = objects.Flavor(name='status', flavorid='status', vcpus=1,
                            memory_mb=512, root_gb=1, ephemeral_gb=0,
                            swap=0, extra_specs={})
    image = objects.ImageMeta.from_dict(IMAGE)
    spec = objects.RequestSpec(
        flavor=flavor, image=image, is_bfv=False, num_instances=1,
        instance_uuid='00000000-0000-0000-0000-000000000000')
    logger = logging.getLogger(boot_requirements.__name__)
    caught = _Warnings()
    logger.addHandler(caught)
    try:
        # NOTE(founders): no context: an image's request filters read no
        # database, and this host may have none.
        with boot_requirements.scheduler_options(
                dict.fromkeys(PREFILTERS, True)):
            boot = boot_requirements.derive(None, spec, image, False)
            if boot.derived is None:
                return None, (' '.join(caught.lines) or
                              'no requirement derived')
            if boot.derived.refusal:
                return None, 'refused: %s' % boot.derived.refusal
            return {(r.trait, r.scope == requirements.ROOT): tuple(r.sources)
                    for r in boot.derived.traits if not r.forbidden}, None
    finally:
        logger.removeHandler(caught)
