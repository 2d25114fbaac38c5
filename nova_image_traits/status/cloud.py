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
"""Checks that ask the cloud: placement's microversion, image traits.

Each function returns an ``oslo_upgradecheck.upgradecheck.Result``.
"""

from oslo_upgradecheck import upgradecheck

from nova_image_traits import exception
from nova_image_traits import images as nit_images
from nova_image_traits import placement

Code = upgradecheck.Code
Result = upgradecheck.Result

#: The lowest placement microversion each strategy works with.
MIN_VERSIONS = {
    'reject': None,
    'root_traits': '1.6',
    'held_providers': '1.6',
    'allocation_traits': '1.6',
    'tree_traits': '1.18',
    'in_tree_candidates': '1.31',
}
#: Versions below which a strategy works, but less well.
PREFERRED_VERSIONS = {'tree_traits': '1.31'}
#: Seconds the status command waits for placement per check.
TIMEOUT = 30.0
#: The longest URL the status command sends (one trait listing).
MAX_URL_LENGTH = 65536


def start(client):
    """A session of ``client``, or raise ``client``: why there is none."""
    if isinstance(client, Exception):
        raise client
    return client.start(TIMEOUT, MAX_URL_LENGTH)


def check_placement(conf, client):
    """Does placement answer, with a microversion the strategies need?

    :param client: a :class:`~nova_image_traits.placement.PlacementClient`
        built from ``[placement]``, or a ``PlacementError`` explaining why
        none could be built
    """
    opts = conf.image_traits
    names = list(dict.fromkeys([opts.strategy, opts.fallback_strategy]))
    try:
        top = start(client).max_version()
    except exception.PlacementError as e:
        return Result(Code.FAILURE, 'Placement does not answer (from '
                      '[placement] in nova.conf): %s' % e.message)
    have = placement.format_version(top)
    short, notes = [], []
    for name in names:
        need = MIN_VERSIONS.get(name)
        if need and top < placement.parse_version(need):
            short.append('%s needs %s' % (name, need))
        better = PREFERRED_VERSIONS.get(name)
        if better and top < placement.parse_version(better):
            notes.append('%s sends one request per trait below %s' % (
                name, better))
    if short:
        return Result(Code.FAILURE, 'Placement supports microversions up '
                      'to %s, but %s.' % (have, ', '.join(short)))
    details = 'Placement supports microversions up to %s; %s need at ' \
              'most %s.' % (have, ' and '.join(names), max(
                  (MIN_VERSIONS.get(n) or '1.0' for n in names),
                  key=placement.parse_version))
    if notes:
        return Result(Code.WARNING, details + ' ' + '; '.join(notes) + '.')
    return Result(Code.SUCCESS, details)


def _names(images):
    return ', '.join(sorted('%s (%s)' % (i.name or '-', i.id)
                            for i in images))


def check_image_traits(conn, client):
    """Do the traits that active images require exist in placement?

    One image listing, then one ``GET /traits?name=in:...`` for the union
    of the traits every active image requires.

    :param conn: an ``openstack.connection.Connection``, or an exception
        saying why none could be made
    :param client: see :func:`check_placement`
    """
    try:
        if isinstance(conn, Exception):
            raise conn
        found = nit_images.list_images(conn)
    except Exception as e:
        return Result(Code.WARNING, 'Cannot check the images: %s' % e)
    active = [i for i in nit_images.with_traits(found)
              if i.status == 'active']
    wanted = set().union(*(i.traits.required for i in active))
    invalid = [i for i in active if i.traits.invalid]
    try:
        known = nit_images.known_traits(start(client), wanted)
    except exception.PlacementError as e:
        return Result(Code.WARNING, 'Cannot check the traits of %d active '
                      'images in placement: %s' % (len(active), e.message))
    unknown = wanted - known
    problems = []
    if unknown:
        users = [i for i in active if i.traits.required & unknown]
        problems.append(
            'placement knows no trait %s, which images %s require: no host '
            'can boot or be rebuilt with them' % (
                ', '.join(sorted(unknown)), _names(users)))
    if invalid:
        problems.append('images %s have trait properties that are not '
                        'valid trait names' % _names(invalid))
    if problems:
        return Result(Code.WARNING, '; '.join(problems) + '. See '
                      'nova-image-traits audit images.')
    return Result(Code.SUCCESS, '%d active images require %d distinct '
                  'traits; placement knows every one.' % (
                      len(active), len(wanted)))
