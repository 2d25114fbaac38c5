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
show`` display it. Before raising it, :func:`restore` returns what nova's
API changed and nova's handler does not roll back, while the server's
task state is still ``rebuilding`` so that no other request can change it
meanwhile.
"""

from oslo_log import log as logging

from nova import exception
from nova import objects
from nova import utils as nova_utils

LOG = logging.getLogger(__name__)


class ImageTraitsRefused(exception.NoValidHost):
    """The image traits check refused the rebuild.

    :ivar restored: what :func:`restore` returned to the current image
    """

    def __init__(self, restored=(), **kwargs):
        super().__init__(**kwargs)
        self.restored = tuple(restored)


#: Instance fields nova's API takes from the image properties of the same
#: names before the cast (``_inherit_properties_from_image``, kernel and
#: ramdisk).
_INHERITED = ('os_type', 'architecture', 'vm_mode', 'kernel_id',
              'ramdisk_id')


def restore(context, instance_uuid, orig_sys_metadata, orig_image_ref):
    """Return the server to its current image after a refused rebuild.

    Nova's API replaced the ``image_*`` system metadata, the fields it
    inherits from the image and the ``RequestSpec.image`` with the refused
    image before casting to the conductor, and nova's handler only rolls
    ``image_ref`` back (nova bugs 1744325, 1746032). Left so, the next move
    would be scheduled with the refused image's traits. Everything comes
    from ``orig_sys_metadata``, the image as nova recorded it at boot.

    ``context`` is the conductor's, which ``rebuild_instance`` has
    targeted at the instance's cell.

    :returns: the names of what was restored; nothing when
        ``orig_sys_metadata`` is unknown, or when it fails (logged)
    """
    if orig_sys_metadata is None:
        return ()
    orig_sys_metadata = dict(orig_sys_metadata)
    image = nova_utils.get_image_from_system_metadata(orig_sys_metadata)
    image['id'] = orig_image_ref
    props = image.get('properties', {})
    try:
        inst = objects.Instance.get_by_uuid(
            context, instance_uuid, expected_attrs=['system_metadata'])
        prefix = nova_utils.SM_IMAGE_PROP_PREFIX
        sysmeta = {k: v for k, v in inst.system_metadata.items()
                   if not k.startswith(prefix)}
        sysmeta.update({k: v for k, v in orig_sys_metadata.items()
                        if k.startswith(prefix)})
        inst.system_metadata = sysmeta
        for field in _INHERITED:
            value = props.get(field)
            if field in ('kernel_id', 'ramdisk_id'):
                # NOTE(founders): as nova's API does
                # (_handle_kernel_and_ramdisk).
                value = '' if value in (None, 'nokernel') else value
            setattr(inst, field, value)
        inst.save()
        spec = objects.RequestSpec.get_by_instance_uuid(context,
                                                        instance_uuid)
        spec.image = objects.ImageMeta.from_dict(image)
        spec.save()
    except Exception:
        LOG.exception('The rebuild was refused, but the image properties '
                      'and request spec of instance %(instance)s could not '
                      'be returned to image %(image)s.',
                      {'instance': instance_uuid, 'image': orig_image_ref})
        return ()
    return ('image properties', 'request spec')


def log_refusal(instance, image_ref, orig_image_ref, refusal):
    """The one WARNING a refused rebuild logs in the conductor."""
    LOG.warning('Rebuild to image %(image)s refused by the image traits '
                'check: %(reason)s The server stays on image %(orig)s '
                '(image_ref%(restored)s restored) and is in ERROR until it '
                'is rebuilt again or hard rebooted.',
                {'image': image_ref, 'orig': orig_image_ref,
                 'reason': refusal.kwargs.get('reason', ''),
                 'restored': ''.join(', ' + r for r in refusal.restored)},
                instance=instance)
