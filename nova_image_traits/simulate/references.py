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
"""What a scenario's schema cannot say: unique names and references."""

import difflib

from nova_image_traits.simulate import loader
from nova_image_traits import traits as nit_traits


def _ref_error(source, item, field, message):
    return loader.ScenarioError(source, item.lines.get(field),
                                '%s.%s' % (item.path, field), message)


def _unique(source, items, seen, what):
    for item in items:
        if item.name in seen:
            raise _ref_error(source, item, 'name',
                             'duplicate %s name %s' % (
                                 what, nit_traits.quote(item.name)))
        seen.add(item.name)


def _known(source, item, field, names, what):
    value = getattr(item, field)
    if value not in names:
        close = difflib.get_close_matches(value, names, 1)
        hint = '; did you mean %r?' % close[0] if close else ''
        raise _ref_error(source, item, field, 'unknown %s %s%s' % (
            what, nit_traits.quote(value), hint))


def check(scn):
    """Check names and references, which a schema cannot.

    :param scn: a :class:`~.scenario.Scenario`
    :raises ScenarioError: naming the line and field at fault
    """
    src = scn.source
    providers = set()
    _unique(src, scn.sharing_providers, providers, 'provider')
    for host in scn.hosts:
        _unique(src, [host], providers, 'provider')
        earlier = set()
        for child in host.children:
            _unique(src, [child], providers, 'provider')
            if child.parent is not None:
                _known(src, child, 'parent', earlier,
                       'parent (an earlier child of %s)' % host.name)
            earlier.add(child.name)
    for kind, what in (('flavors', 'flavor'), ('images', 'image'),
                       ('servers', 'server'), ('cases', 'case')):
        _unique(src, getattr(scn, kind), set(), what)

    hosts = scn.by_name('hosts')
    for server in scn.servers:
        _known(src, server, 'host', hosts, 'host')
        _known(src, server, 'flavor', scn.by_name('flavors'), 'flavor')
        _known(src, server, 'image', scn.by_name('images'), 'image')
        host = hosts[server.host]
        reachable = set(host.tree()) | {s.name for s in scn.sharing(host)}
        for name in server.allocations or {}:
            if name not in reachable:
                raise _ref_error(
                    src, server, 'allocations',
                    'provider %s is neither in the tree of host %s nor a '
                    'sharing provider of its aggregates' % (
                        nit_traits.quote(name), host.name))
    for case in scn.cases:
        _known(src, case, 'server', scn.by_name('servers'), 'server')
        _known(src, case, 'image', scn.by_name('images'), 'image')
