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
"""A rebuild with the server's own image: did the image change?

nova's ``API.rebuild`` schedules and checks nothing when the image id stays
the same, as nova decides it: the server's ``image_ref``, or for a
volume-backed server the ``image_id`` of its root volume's image metadata.
It still rewrites the server's ``image_*`` system metadata from the image
Glance returns now (``_reset_image_metadata``), and the compute applies
those properties. :func:`changed` tells the pre-check when that rewrite
brings properties a boot would be judged by.

The image is compared as nova reads it: its ``ImageMetaProps``, which hold
every property nova turns into a requirement (``trait:<NAME>=required`` as
``traits_required``, the vTPM, secure boot, bus, model and architecture
properties...). A property nova does not read (a description, Glance's
``os_hash_value``) changes nothing a boot asks, and does not count; nor do
``min_ram``, ``min_disk`` and ``disk_format``, which nova-api checks itself
or Glance keeps immutable. The new image is first passed through nova's own
system metadata round trip (strings, 255 characters, skipped keys), so that
both sides are read alike.
"""

from nova import objects
from nova import utils as nova_utils
from oslo_log import log as logging

LOG = logging.getLogger(__name__)


def _properties(image):
    """The properties nova reads of an image dict, or None if it cannot."""
    try:
        props = objects.ImageMetaProps.from_dict(
            image.get('properties') or {}).to_dict()
    except Exception as e:
        LOG.info('nova cannot read the image properties %(props)s: '
                 '%(error)s', {'props': image.get('properties'), 'error': e})
        return None
    # NOTE(nova-image-traits): a set in all but type; the order of the
    # properties of Glance's answer and of the database's rows differ.
    if 'traits_required' in props:
        props['traits_required'] = sorted(props['traits_required'])
    return props


def recorded(system_metadata):
    """The properties nova reads of the image ``system_metadata`` records.

    :param system_metadata: the server's system metadata *before* nova's
        rebuild rewrote it
    :returns: a dict, or None when nova cannot read them
    """
    return _properties(nova_utils.get_image_from_system_metadata(
        dict(system_metadata or {})))


def current(image, flavor=None):
    """The properties nova reads of ``image`` once recorded as nova does.

    :param image: the image dict nova's rebuild read from Glance
    :param flavor: the server's flavor, as nova passes it
    """
    return _properties(nova_utils.get_image_from_system_metadata(
        nova_utils.get_system_metadata_from_image(image, flavor)))


def changed(system_metadata, image, flavor=None):
    """Whether a rebuild with ``image`` brings properties nova reads anew.

    True as well when either side cannot be read: the image is then judged
    as a new one, which is where a doubt belongs.

    :param system_metadata: the server's system metadata before the
        rebuild (nova rewrites it after its first ``instance.save``)
    :param image: the image dict nova's rebuild read from Glance
    :param flavor: the server's flavor
    """
    before = recorded(system_metadata)
    after = current(image, flavor)
    return before is None or after is None or before != after
