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
"""Read images and the traits they require, through openstacksdk.

Used by ``nova-image-traits audit images``, ``check``, ``audit`` and
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

Image = collections.namedtuple('Image', ['id', 'name', 'status', 'traits',
                                         'properties', 'updated_at'],
                               defaults=(None, None))
Image.__doc__ = """An image as the checks see it.

:ivar traits: the :class:`~nova_image_traits.traits.ImageTraits` its
    ``trait:`` properties ask for
:ivar properties: the image as Glance sends it (:func:`glance_flat`), or
    its properties alone from nova's image API
:ivar updated_at: when the image last changed, as the service says (an
    ISO 8601 string), or None
"""


class ImagesUnavailable(Exception):
    """The images could not be listed; the message names the service."""


def source_of(conn, source='auto'):
    """Resolve ``auto`` to ``image`` or ``compute`` for ``conn``."""
    if source == 'auto':
        return 'image' if conn.has_service('image') else 'compute'
    return source


def _image(image_id, name, status, properties, updated_at=None):
    return Image(id=image_id, name=name, status=status,
                 traits=nit_traits.image_traits(properties or {}),
                 properties=dict(properties or {}),
                 updated_at=updated_at or None)


def list_images(conn, source='auto'):
    """Every image the connection can see, as :class:`Image` tuples.

    :param conn: an ``openstack.connection.Connection``
    :param source: one of :data:`SOURCES`
    :raises ImagesUnavailable: when the service does not answer
    """
    source = source_of(conn, source)
    try:
        if source == 'image':
            return [_image(i.id, i.name, i.status, glance_flat(i),
                           i.updated_at)
                    for i in conn.image.images()]
        return _from_compute(conn)
    except ImagesUnavailable:
        raise
    except Exception as e:
        raise ImagesUnavailable('cannot list images from the %s service: '
                                '%s: %s' % (source, type(e).__name__, e))


def _from_compute(conn):
    found, query = [], {'limit': 1000}
    while True:
        url = '/images/detail?' + urllib.parse.urlencode(query)
        resp = conn.compute.get(url, microversion=IMAGE_PROXY_VERSION,
                                raise_exc=False)
        if resp.status_code != 200:
            raise ImagesUnavailable(
                "cannot list images through nova's image API (GET %s at "
                'compute microversion %s): HTTP %s' % (
                    url, IMAGE_PROXY_VERSION, resp.status_code))
        page = resp.json().get('images') or []
        found += [_image(i['id'], i.get('name'),
                         str(i.get('status', '')).lower(), i.get('metadata'),
                         i.get('updated'))
                  for i in page]
        if len(page) < query['limit']:
            return found
        query['marker'] = page[-1]['id']


def with_traits(images, wanted=(), asks=None):
    """Keep the images with ``trait:`` properties, or those ``wanted``.

    :param wanted: image names or IDs; none means every image with traits
    :param asks: ``image -> bool``, whether an image without ``trait:``
        properties asks for something else (what nova derives) and is
        kept too
    """
    if wanted:
        wanted = set(wanted)
        return [i for i in images if i.id in wanted or i.name in wanted]
    return [i for i in images if i.traits.required or i.traits.invalid or
            (asks is not None and asks(i))]


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


def glance_flat(image):
    """An SDK image as Glance's API sends it: attributes and properties.

    openstacksdk moves the properties it knows (``hw_disk_bus``,
    ``os_secure_boot``...) out of ``properties`` into attributes; nova
    reads them all, and the image's ``disk_format`` too.
    """
    flat = {}
    if hasattr(image, 'to_dict'):
        flat = {k: v for k, v in image.to_dict(
            computed=False, headers=False, original_names=True).items()
            if v is not None and k != 'properties'}
    flat.update(image.properties or {})
    return flat


class LookupFailed(Exception):
    """Something the command needs could not be read from the cloud."""


class ImageNotFound(LookupFailed):
    """The image service answered: there is no such image."""


class ServiceUnavailable(LookupFailed):
    """A service did not answer; every further request would fail too."""


def remember(cache, key, lookup):
    """Return ``lookup(key)``, looked up once: its answer or its failure.

    :raises LookupFailed: what ``lookup`` raised, the first time or again
    """
    if key not in cache:
        try:
            cache[key] = lookup(key)
        except LookupFailed as e:
            cache[key] = e
    if isinstance(cache[key], LookupFailed):
        raise cache[key]
    return cache[key]


class ImageSource:
    """Image properties, read once each.

    A missing image is remembered too: a deleted image costs one lookup
    per audit.

    :param conn: an ``openstack.connection.Connection``
    :param source: one of :data:`SOURCES`
    """

    def __init__(self, conn, source='auto'):
        self.conn = conn
        self.source = source_of(conn, source)
        self._images = {}

    def get(self, name_or_id):
        """Return ``(id, properties)`` of an image; cached."""
        found = remember(self._images, name_or_id,
                         self._from_image_service if self.source == 'image'
                         else self._from_compute)
        self._images.setdefault(found[0], found)
        return found

    def _from_image_service(self, name_or_id):
        try:
            image = self.conn.image.find_image(name_or_id,
                                               ignore_missing=True)
        except Exception as e:
            raise ServiceUnavailable(
                'The image service did not answer for image %s: %s: %s' % (
                    name_or_id, type(e).__name__, e))
        if image is None:
            raise ImageNotFound('No image with name or ID %s' % name_or_id)
        return image.id, glance_flat(image)

    def _get(self, url, name_or_id, missing_ok=False):
        """GET ``url`` from nova's image API; an error means it is down.

        :param missing_ok: whether a 404 is an answer (an ID, not a name)
        :raises ServiceUnavailable: on any other status than 200
        """
        resp = self.conn.compute.get(url, microversion=IMAGE_PROXY_VERSION,
                                     raise_exc=False)
        if resp.status_code != 200 and not (
                missing_ok and resp.status_code == 404):
            raise ServiceUnavailable(
                "Nova's image API (GET %s, compute microversion %s) answered "
                'HTTP %s for image %s: the image service may be down' % (
                    urllib.parse.urlsplit(resp.request.url).path,
                    IMAGE_PROXY_VERSION, resp.status_code, name_or_id))
        return resp

    def _from_compute(self, name_or_id):
        resp = self._get('/images/%s' % urllib.parse.quote(
            name_or_id, safe=''), name_or_id, missing_ok=True)
        if resp.status_code == 200:
            image = resp.json()['image']
        else:
            resp = self._get('/images/detail?' + urllib.parse.urlencode(
                {'name': name_or_id}), name_or_id)
            # NOTE(founders): filter again: not every image backend honours
            # ?name=.
            images = [i for i in resp.json().get('images', [])
                      if i.get('name') == name_or_id]
            if len(images) > 1:
                raise LookupFailed('More than one image with name %s '
                                   "(nova's image API)" % name_or_id)
            if not images:
                raise ImageNotFound('No image with name or ID %s (nova\'s '
                                    'image API)' % name_or_id)
            image = images[0]
        return image['id'], dict(image.get('metadata') or {})
