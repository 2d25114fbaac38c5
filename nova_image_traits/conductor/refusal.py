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
"""What the conductor does with a refused rebuild.

The hook raises :class:`ImageTraitsRefused`, a ``NoValidHost``, so that
nova's own handler in ``ComputeTaskManager.rebuild_instance`` does what it
always does with a refusal: the server goes to ERROR, its ``image_ref``
is rolled back, and the reason is recorded as the instance fault and in
the rebuild action's event, where ``server show`` and ``server event
show`` display it. :func:`finish_rollback` then restores what nova leaves
behind.
"""

from oslo_log import log as logging

from nova import exception
from nova import objects
from nova import utils as nova_utils

LOG = logging.getLogger(__name__)


class ImageTraitsRefused(exception.NoValidHost):
    """The image traits check refused the rebuild.

    A ``NoValidHost``, so that nova's own handler in ``rebuild_instance``
    sets the server to ERROR, rolls ``image_ref`` back and records the
    reason as the fault and in the action event; the hook then finishes
    the rollback (:func:`_finish_rollback`).
    """


def finish_rollback(manager, context, instance, capture, refusal):
    """Return the server's image properties and request spec to its image.

    Nova's API replaced the ``image_*`` system metadata and the
    ``RequestSpec.image`` with the refused image before casting to the
    conductor, and nova's handler only rolls ``image_ref`` back (nova bugs
    1744325, 1746032). Left so, the next move would be scheduled with the
    refused image's traits. ``context`` is targeted at the instance's cell
    by ``rebuild_instance`` itself.
    """
    uuid = capture.instance_uuid
    orig_ref = capture.orig_image_ref
    restored = []
    try:
        orig_sys_metadata = capture.orig_sys_metadata
        if orig_sys_metadata is not None:
            inst = objects.Instance.get_by_uuid(
                context, uuid, expected_attrs=['system_metadata'])
            prefix = nova_utils.SM_IMAGE_PROP_PREFIX
            sysmeta = {k: v for k, v in inst.system_metadata.items()
                       if not k.startswith(prefix)}
            sysmeta.update({k: v for k, v in dict(orig_sys_metadata).items()
                            if k.startswith(prefix)})
            inst.system_metadata = sysmeta
            inst.save()
            restored.append('image properties')
        spec = objects.RequestSpec.get_by_instance_uuid(context, uuid)
        spec.image = _original_image_meta(manager, context, orig_ref,
                                          orig_sys_metadata)
        spec.save()
        restored.append('request spec')
    except Exception:
        LOG.exception('The rebuild to image %(image)s was refused, but the '
                      'server\'s %(what)s could not be returned to image '
                      '%(orig)s.',
                      {'image': capture.image_ref, 'orig': orig_ref,
                       'what': 'image properties and request spec'},
                      instance=instance)
        return
    LOG.warning('Rebuild to image %(image)s refused by the image traits '
                'check: %(reason)s The server stays on image %(orig)s '
                '(image_ref, %(restored)s restored) and is in ERROR until it '
                'is rebuilt again or hard rebooted.',
                {'image': capture.image_ref, 'orig': orig_ref,
                 'reason': refusal.kwargs.get('reason', ''),
                 'restored': ' and '.join(restored)}, instance=instance)


def _original_image_meta(manager, context, image_ref, orig_sys_metadata):
    """The ``ImageMeta`` of the image being kept, as the API built it.

    From Glance, like the API did for the new image; from the system
    metadata nova recorded at boot when Glance cannot give it (the image
    was deleted since).
    """
    try:
        return objects.ImageMeta.from_image_ref(context, manager.image_api,
                                                image_ref)
    except Exception as e:
        if orig_sys_metadata is None:
            raise
        LOG.info('Cannot read image %(image)s from the image service '
                 '(%(error)s); rebuilding its metadata from the server\'s '
                 'system metadata.', {'image': image_ref, 'error': e})
        image = nova_utils.get_image_from_system_metadata(
            dict(orig_sys_metadata))
        image['id'] = image_ref
        return objects.ImageMeta.from_dict(image)
