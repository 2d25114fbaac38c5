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
from nova.compute import utils as compute_utils
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
#: names before the cast (``_inherit_properties_from_image``; the kernel
#: and ramdisk ids follow nova's own rule below). ``auto_disk_config`` is
#: not one of them: nova takes it from the request when the request names
#: it, and the conductor cannot tell.
_INHERITED = ('os_type', 'architecture', 'vm_mode')


def is_volume_backed(context, instance, bdms, request_spec):
    """Whether nova's API took ``instance`` for a volume-backed server.

    As nova's ``API.rebuild`` decides it: from the root block device
    mapping, with the ``bdms`` it passed to the conductor; without them
    (not from nova 31 to 34's API), from the request spec's ``is_bfv``.
    Nothing is read from the database: the context is not yet targeted at
    the instance's cell when the hook calls this.
    """
    if bdms is not None:
        return compute_utils.is_volume_backed_instance(context, instance,
                                                       bdms)
    if request_spec is not None and 'is_bfv' in request_spec:
        return bool(request_spec.is_bfv)
    # As nova answers for a server without a root BDM.
    return not instance.image_ref


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
    updates.update({field: props.get(field) for field in _INHERITED})
    kernel_id = props.get('kernel_id')
    ramdisk_id = props.get('ramdisk_id')
    # NOTE(nova-image-traits): nova's rule, in API._handle_kernel_and_ramdisk
    # (nova/compute/api.py): 'nokernel' clears both ids. Not that method
    # itself: it asks Glance for each image, and a rollback must not fail
    # because a kernel image has been deleted since.
    if kernel_id == 'nokernel':
        kernel_id = ramdisk_id = None
    updates['kernel_id'] = kernel_id or ''
    updates['ramdisk_id'] = ramdisk_id or ''
    return updates


def restore(context, instance_uuid, orig_sys_metadata, orig_image_ref,
            volume_backed=False, image_ref='', boot_image_id=None):
    """Return the server to its current image after a refused rebuild.

    Nova's API replaced the ``image_*`` system metadata, the fields it
    inherits from the image and the ``RequestSpec.image`` with the refused
    image before casting to the conductor, and nova's handler only rolls
    ``image_ref`` back (nova bugs 1744325, 1746032). Left so, the next move
    would be scheduled with the refused image's traits, and the next hard
    reboot would build the guest with its properties.

    Two parts, each restored whether or not the other could be:

    * the instance: its ``image_*`` system metadata (from
      ``orig_sys_metadata``, the image as nova recorded it at boot), the
      fields nova's API took from the image and, for a volume-backed
      server, its ``image_ref``. Nova's API keeps that over a rebuild
      (empty for a server created from a volume without ``imageRef``), but
      nova's handler sets it to ``orig_image_ref``, the image of the root
      volume; it is set back to ``image_ref``. Written only while the task
      state is still ``rebuilding``;
    * the request spec: its image is nova's own ``ImageMeta.from_instance``
      of the restored instance, which names the image only when the
      instance has one.

    ``context`` is the conductor's, which ``rebuild_instance`` has
    targeted at the instance's cell.

    :param image_ref: the server's ``image_ref`` before the rebuild; used
        for a volume-backed server only
    :param boot_image_id: for a volume-backed server, the image its root
        volume was created from at boot (:func:`boot_image_id`), named by
        the request spec when nova's rebuild read no image of the volume
    :returns: a :class:`Restoration`; what could not be restored is logged
    """
    restored, missed = [], []
    parts = []
    if volume_backed:
        parts.append(IMAGE_REF if image_ref else EMPTY_IMAGE_REF)
    else:
        restored.append(IMAGE_REF)  # by nova's handler
    if orig_sys_metadata is not None:
        parts.append(IMAGE_PROPERTIES)
    else:
        LOG.warning('The rebuild of instance %s was refused, but nova did '
                    'not pass the system metadata of its current image: '
                    'its image properties and request spec keep the '
                    'refused image.', instance_uuid)
        missed += [IMAGE_PROPERTIES, REQUEST_SPEC]
    spec_part = [REQUEST_SPEC] if orig_sys_metadata is not None else []
    try:
        inst = objects.Instance.get_by_uuid(
            context, instance_uuid, expected_attrs=['system_metadata'])
    except Exception:
        LOG.exception('The rebuild of instance %(instance)s was refused, '
                      'but it could not be read; nothing more was restored '
                      'to image %(image)s.',
                      {'instance': instance_uuid, 'image': orig_image_ref})
        return Restoration(tuple(restored), tuple(missed + parts + spec_part))

    try:
        if volume_backed:
            inst.image_ref = image_ref or ''
        if orig_sys_metadata is not None:
            # The system metadata first: the request spec is built from it
            # even if a field of an older nova's image cannot be set.
            inst.update(_instance_updates(inst, dict(orig_sys_metadata)))
        if parts:
            inst.save(expected_task_state=[task_states.REBUILDING])
        restored += parts
    except exception.UnexpectedTaskStateError:
        # Not in this rebuild any more: whatever changed it owns the spec.
        LOG.warning('The rebuild of instance %(instance)s was refused, but '
                    'its task state changed before it could be returned to '
                    'image %(image)s; nothing more was restored.',
                    {'instance': instance_uuid, 'image': orig_image_ref})
        return Restoration(tuple(restored), tuple(missed + parts + spec_part))
    except Exception:
        LOG.exception('The rebuild of instance %(instance)s was refused, '
                      'but its %(parts)s could not be returned to image '
                      '%(image)s.', {'instance': instance_uuid,
                                     'image': orig_image_ref,
                                     'parts': ', '.join(parts)})
        missed += parts
    if spec_part:
        done = _restore_spec(context, inst, orig_image_ref,
                             (orig_image_ref or boot_image_id)
                             if volume_backed else None)
        (restored if done else missed).append(REQUEST_SPEC)
    return Restoration(tuple(restored), tuple(missed))


def boot_image_id(bdms):
    """The image a volume-backed server's request spec names since boot.

    Booted without ``imageRef``, nova's API reads the image of a root block
    device created from an image (``block_device.get_bdm_image_metadata``),
    with its id; from an existing volume it reads the volume's image
    metadata, without one. A rebuild does not change the root BDM.

    :param bdms: the ``BlockDeviceMappingList`` nova's API passed
    :returns: the root BDM's ``image_id``, or None
    """
    root = bdms.root_bdm() if bdms else None
    return root.image_id if root is not None else None


def _restore_spec(context, instance, orig_image_ref, volume_image_id):
    """Give the request spec the image of ``instance``; True when done.

    :param volume_image_id: for a volume-backed server, the image of its
        root volume: the one nova's rebuild read (``orig_image_ref``, which
        an accepted reimage writes into the spec), else the one the volume
        was created from at boot. Used when the server has no
        ``image_ref`` (created with one, its spec names that image).
    """
    try:
        spec = objects.RequestSpec.get_by_instance_uuid(context,
                                                        instance.uuid)
        image = objects.ImageMeta.from_instance(instance)
        if volume_image_id and not instance.image_ref:
            image.id = volume_image_id
        spec.image = image
        spec.save()
    except Exception:
        LOG.exception('The rebuild of instance %(instance)s was refused, '
                      'but its request spec could not be returned to image '
                      '%(image)s.', {'instance': instance.uuid,
                                     'image': orig_image_ref or '-'})
        return False
    return True


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
