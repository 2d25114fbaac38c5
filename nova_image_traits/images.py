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
"""List images and the traits they require, through openstacksdk.

Used by ``nova-image-traits audit images`` and by
``nova-image-traits-status upgrade check``. Images come from the image
service (``conn.image.images()``, paginated) when the catalog has one;
otherwise from nova's image proxy API (``GET /images/detail`` at compute
microversion 2.35, the last one that has it), which returns the same
properties as ``metadata``.

It also asks placement which of a set of trait names it knows, in one
request (``GET /traits?name=in:A,B,...``, microversion 1.6).
"""

import collections
import urllib.parse

from nova_image_traits import traits as nit_traits

#: The last compute API microversion with the image proxy API.
IMAGE_PROXY_VERSION = '2.35'
SOURCES = ('auto', 'image', 'compute')
#: Microversion of ``GET /traits``.
TRAITS_VERSION = '1.6'

Image = collections.namedtuple('Image', ['id', 'name', 'status', 'traits'])
Image.__doc__ = """An image as the checks see it.

:ivar traits: the :class:`~nova_image_traits.traits.ImageTraits` its
    ``trait:`` properties ask for
"""


class ImagesUnavailable(Exception):
    """The images could not be listed; the message names the service."""


def source_of(conn, source='auto'):
    """Resolve ``auto`` to ``image`` or ``compute`` for ``conn``."""
    if source == 'auto':
        return 'image' if conn.has_service('image') else 'compute'
    return source


def _image(image_id, name, status, properties):
    return Image(id=image_id, name=name, status=status,
                 traits=nit_traits.image_traits(properties or {}))


def list_images(conn, source='auto'):
    """Every image the connection can see, as :class:`Image` tuples.

    :param conn: an ``openstack.connection.Connection``
    :param source: one of :data:`SOURCES`
    :raises ImagesUnavailable: when the service does not answer
    """
    source = source_of(conn, source)
    try:
        if source == 'image':
            return [_image(i.id, i.name, i.status, i.properties)
                    for i in conn.image.images()]
        return _from_compute(conn)
    except ImagesUnavailable:
        raise
    except Exception as e:
        raise ImagesUnavailable('cannot list images from the %s service: '
                                '%s: %s' % (source, type(e).__name__, e))


def _from_compute(conn):
    compute = conn.compute
    found, marker = [], None
    while True:
        query = {'limit': 1000}
        if marker:
            query['marker'] = marker
        url = '/images/detail?' + urllib.parse.urlencode(query)
        resp = compute.get(url, microversion=IMAGE_PROXY_VERSION,
                           raise_exc=False)
        if resp.status_code != 200:
            raise ImagesUnavailable(
                "cannot list images through nova's image API (GET %s at "
                'compute microversion %s): HTTP %s' % (
                    url, IMAGE_PROXY_VERSION, resp.status_code))
        page = resp.json().get('images') or []
        for i in page:
            found.append(_image(i['id'], i.get('name'),
                                str(i.get('status', '')).lower(),
                                i.get('metadata')))
        if len(page) < query['limit']:
            return found
        marker = page[-1]['id']


def with_traits(images, wanted=()):
    """Keep the images with ``trait:`` properties, or those ``wanted``.

    :param wanted: image names or IDs; none means every image with traits
    """
    if wanted:
        wanted = set(wanted)
        return [i for i in images if i.id in wanted or i.name in wanted]
    return [i for i in images if i.traits.required or i.traits.invalid]


def known_traits(session, names):
    """Return the subset of ``names`` that placement knows.

    One ``GET /traits?name=in:...`` request.

    :param session: a :class:`~nova_image_traits.placement.PlacementSession`
    :raises: PlacementError subclasses
    """
    names = sorted(set(names))
    if not names:
        return set()
    body = session.get('/traits', [('name', 'in:' + ','.join(names))],
                       version=TRAITS_VERSION)
    return set(body.get('traits') or ()) & set(names)
