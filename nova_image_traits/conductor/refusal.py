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

Whoever refuses a rebuild to a new image (the hook's check, a scheduler
filter such as ``ImageTraitsFilter``, placement), nova's own handler in
``ComputeTaskManager.rebuild_instance`` does what it always does: it sets
``instance.image_ref`` to ``orig_image_ref``, then the server goes to
ERROR and the reason is recorded as the instance fault and in the rebuild
action's event, where ``server show`` and ``server event show`` display
it. The hook wraps the step that sets ERROR (``_set_vm_state_and_notify``)
so that :func:`restore` runs just before it, while the server's task state
is still ``rebuilding`` and no other request can change it meanwhile, and
returns what nova's API changed and nova's handler does not roll back.

The hook's own refusal is an :class:`ImageTraitsRefused`, a
``NoValidHost``, so that nova's handler treats it like any other.
"""

import collections

from oslo_log import log as logging

from nova.compute import task_states
from nova import exception
from nova import objects
from nova import utils as nova_utils

LOG = logging.getLogger(__name__)

#: The parts :func:`restore` can return to the current image.
IMAGE_REF = 'image_ref'
EMPTY_IMAGE_REF = 'empty image_ref (volume-backed)'
IMAGE_PROPERTIES = 'image properties'
REQUEST_SPEC = 'request spec'


class ImageTraitsRefused(exception.NoValidHost):
    """The image traits check refused the rebuild.

    ``reason`` is the fault's message (``format_message``), which nova
    stores once and shows to everyone who can see the server, and the
    rebuild event's details: it never names the host's detail.
    ``detail``, the reason with that detail, is in ``str()`` of the
    exception only, which nova writes into the fault's ``details`` (the
    formatted exception, kept for code 500 and shown to admins only) and
    into its own log.
    """

    def __str__(self):
        detail = self.kwargs.get('detail')
        if not detail:
            return self.format_message()
        return self.msg_fmt % dict(self.kwargs, reason=detail)


#: What :func:`restore` did: the parts it returned to the current image
#: and those it did not, each a tuple of the names above.
Restoration = collections.namedtuple('Restoration', ['restored', 'missed'])

#: Instance fields nova's API takes from the image properties of the same
#: names before the cast (``_inherit_properties_from_image``, kernel and
#: ramdisk). ``auto_disk_config`` is not one of them: nova takes it from the
#: request when the request names it, and the conductor cannot tell.
_INHERITED = ('os_type', 'architecture', 'vm_mode', 'kernel_id',
              'ramdisk_id')


def _instance_updates(instance, orig_sys_metadata):
    """The system metadata and fields of the current image, for instance."""
    image = nova_utils.get_image_from_system_metadata(orig_sys_metadata)
    props = image.get('properties', {})
    prefix = nova_utils.SM_IMAGE_PROP_PREFIX
    sysmeta = {k: v for k, v in instance.system_metadata.items()
               if not k.startswith(prefix)}
    sysmeta.update({k: v for k, v in orig_sys_metadata.items()
                    if k.startswith(prefix)})
    updates = {'system_metadata': sysmeta}
    for field in _INHERITED:
        value = props.get(field)
        if field in ('kernel_id', 'ramdisk_id'):
            # NOTE(nova-image-traits): as nova's API does
            # (_handle_kernel_and_ramdisk).
            value = '' if value in (None, 'nokernel') else value
        updates[field] = value
    return updates


def restore(context, instance_uuid, orig_sys_metadata, orig_image_ref,
            volume_backed=False):
    """Return the server to its current image after a refused rebuild.

    Nova's API replaced the ``image_*`` system metadata, the fields it
    inherits from the image and the ``RequestSpec.image`` with the refused
    image before casting to the conductor, and nova's handler only rolls
    ``image_ref`` back (nova bugs 1744325, 1746032). Left so, the next move
    would be scheduled with the refused image's traits. Everything comes
    from ``orig_sys_metadata``, the image as nova recorded it at boot.

    A volume-backed server has an empty ``image_ref``, which nova's API
    keeps over a rebuild (that is how nova tells it is volume-backed), but
    nova's handler sets it to ``orig_image_ref``, the image of the root
    volume; it is emptied again.

    Everything is read and built before the first write, so that a bad
    value writes nothing. The instance is written first (only while its
    task state is still ``rebuilding``), then the request spec.

    ``context`` is the conductor's, which ``rebuild_instance`` has
    targeted at the instance's cell.

    :returns: a :class:`Restoration`; what could not be restored is logged
    """
    restored, missed = [], []
    wanted = [EMPTY_IMAGE_REF if volume_backed else IMAGE_REF]
    if orig_sys_metadata is not None:
        wanted += [IMAGE_PROPERTIES, REQUEST_SPEC]
    else:
        LOG.warning('The rebuild of instance %s was refused, but nova did '
                    'not pass the system metadata of its current image: '
                    'its image properties and request spec keep the '
                    'refused image.', instance_uuid)
        missed += [IMAGE_PROPERTIES, REQUEST_SPEC]
    try:
        inst = objects.Instance.get_by_uuid(
            context, instance_uuid, expected_attrs=['system_metadata'])
        updates = {}
        if volume_backed:
            updates['image_ref'] = ''
        spec = image_meta = None
        if orig_sys_metadata is not None:
            orig_sys_metadata = dict(orig_sys_metadata)
            updates.update(_instance_updates(inst, orig_sys_metadata))
            image = nova_utils.get_image_from_system_metadata(
                orig_sys_metadata)
            image['id'] = orig_image_ref
            image_meta = objects.ImageMeta.from_dict(image)
            spec = objects.RequestSpec.get_by_instance_uuid(context,
                                                            instance_uuid)
        inst.update(updates)
    except Exception:
        LOG.exception('The rebuild of instance %(instance)s was refused, '
                      'but what its current image %(image)s needs could not '
                      'be read; nothing more was restored.',
                      {'instance': instance_uuid, 'image': orig_image_ref})
        if not volume_backed:
            restored.append(IMAGE_REF)  # by nova's handler
            wanted.remove(IMAGE_REF)
        return Restoration(tuple(restored), tuple(missed + wanted))

    parts = [p for p in wanted if p != REQUEST_SPEC]
    try:
        if updates:
            inst.save(expected_task_state=[task_states.REBUILDING])
        restored += parts
    except Exception:
        LOG.exception('The rebuild of instance %(instance)s was refused, '
                      'but its %(parts)s could not be returned to image '
                      '%(image)s.', {'instance': instance_uuid,
                                     'image': orig_image_ref,
                                     'parts': ', '.join(parts)})
        if not volume_backed:
            # Nova's handler has saved it already.
            restored.append(IMAGE_REF)
            parts.remove(IMAGE_REF)
        missed += parts
        if spec is not None:
            missed.append(REQUEST_SPEC)
        return Restoration(tuple(restored), tuple(missed))
    if spec is not None:
        try:
            spec.image = image_meta
            spec.save()
            restored.append(REQUEST_SPEC)
        except Exception:
            LOG.exception('The rebuild of instance %(instance)s was refused '
                          'and its %(parts)s returned to image %(image)s, '
                          'but its request spec could not be.',
                          {'instance': instance_uuid,
                           'image': orig_image_ref,
                           'parts': ', '.join(parts)})
            missed.append(REQUEST_SPEC)
    return Restoration(tuple(restored), tuple(missed))


def describe(restoration):
    """``restored: ...; not restored: ...`` for a log line.

    :param restoration: a :class:`Restoration`, or None when
        :func:`restore` did not run
    """
    if restoration is None:
        return 'nothing restored beyond what nova rolls back'
    text = 'restored: %s' % (', '.join(restoration.restored) or 'nothing')
    if restoration.missed:
        text += '; not restored: %s' % ', '.join(restoration.missed)
    return text


def log_refusal(instance, image_ref, orig_image_ref, refusal, restoration):
    """The one WARNING a refused rebuild logs in the conductor.

    :param refusal: the exception nova's handler re-raised
    :param restoration: what :func:`restore` did, or None
    """
    if isinstance(refusal, ImageTraitsRefused):
        by = 'the image traits check: %s' % (
            refusal.kwargs.get('detail') or refusal.kwargs.get('reason', ''))
    else:
        by = '%s: %s' % (type(refusal).__name__, refusal)
    by = by.rstrip()
    if not by.endswith('.'):
        by += '.'
    LOG.warning('Rebuild to image %(image)s refused by %(by)s The server '
                'stays on image %(orig)s (%(restored)s; the rebuild '
                "request's own changes, such as its key pair, name, "
                'metadata or auto_disk_config, are kept) and is in ERROR '
                'until it is rebuilt again or hard rebooted.',
                {'image': image_ref, 'orig': orig_image_ref or '-',
                 'by': by, 'restored': describe(restoration)},
                instance=instance)
