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
"""Load and validate the YAML scenarios of ``nova-image-traits simulate``.

A scenario describes a small cloud (compute hosts with nested providers,
sharing providers, flavors, images, servers) and the rebuilds to judge.
The format is documented in ``doc/source/admin/scenario-format.rst``.

Every error is a :class:`ScenarioError` whose text is one line naming the
file, the line and the field at fault. Line numbers come from the YAML
nodes: :class:`_Loader` records, for each mapping, the line of each key and
of each value.
"""

import dataclasses
import difflib
import re
import typing as ty

import yaml

from nova_image_traits import cli
from nova_image_traits import flavor as nit_flavor
from nova_image_traits import traits as nit_traits

import os_resource_classes

_CUSTOM_RC = re.compile(r'^CUSTOM_[A-Z0-9_]+$')


class ScenarioError(cli.UsageError):
    """A scenario that cannot be used, with where and why.

    :param source: the file name (or ``<string>``)
    :param line: the 1-based line number, or None
    :param field: the dotted path of the field at fault, or None
    :param message: what is wrong
    """

    def __init__(self, source, line, field, message):
        self.source = source
        self.line = line
        self.field = field
        self.message = message
        where = source if line is None else '%s:%d' % (source, line)
        text = message if field is None else '%s: %s' % (field, message)
        super().__init__('%s: %s' % (where, text))


class _Invalid(Exception):
    """Raised by field parsers; the walker adds the line and the field."""


class _Mapping(dict):
    """A YAML mapping that remembers where its keys and values are."""

    line = 0
    key_lines = None
    value_lines = None


class _Sequence(list):
    """A YAML sequence that remembers where its items are."""

    line = 0
    item_lines = None


class _Loader(yaml.SafeLoader):
    """A SafeLoader recording line numbers and refusing duplicate keys."""

    source = '<string>'


def _construct_mapping(loader, node):
    data = _Mapping()
    data.line = node.start_mark.line + 1
    data.key_lines, data.value_lines = {}, {}
    yield data
    loader.flatten_mapping(node)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        try:
            hash(key)
        except TypeError:
            raise ScenarioError(loader.source, line, None,
                                'a mapping key must be a plain value')
        if key in data:
            raise ScenarioError(loader.source, line, str(key),
                                'duplicate key (first on line %d)'
                                % data.key_lines[key])
        data[key] = loader.construct_object(value_node, deep=True)
        data.key_lines[key] = line
        data.value_lines[key] = value_node.start_mark.line + 1


def _construct_sequence(loader, node):
    data = _Sequence()
    data.line = node.start_mark.line + 1
    data.item_lines = [n.start_mark.line + 1 for n in node.value]
    yield data
    data.extend(loader.construct_object(n, deep=True) for n in node.value)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                        _construct_mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG,
                        _construct_sequence)


# -- the model ----------------------------------------------------------------

def _lines():
    return dataclasses.field(default_factory=dict, repr=False, compare=False)


@dataclasses.dataclass
class Child:
    """A nested provider under a compute host."""
    name: str
    parent: ty.Optional[str] = None
    inventory: dict = dataclasses.field(default_factory=dict)
    traits: list = dataclasses.field(default_factory=list)
    path: str = ''
    lines: dict = _lines()


@dataclasses.dataclass
class Host:
    """A compute node: the root provider of its tree."""
    name: str
    vcpus: int = 8
    memory_mb: int = 16384
    disk_gb: int = 100
    traits: list = dataclasses.field(default_factory=list)
    aggregates: list = dataclasses.field(default_factory=list)
    children: list = dataclasses.field(default_factory=list)
    full: bool = False
    path: str = ''
    lines: dict = _lines()


@dataclasses.dataclass
class SharingProvider:
    """A provider sharing its inventory with the hosts of its aggregates."""
    name: str
    aggregates: list = dataclasses.field(default_factory=list)
    inventory: dict = dataclasses.field(default_factory=dict)
    traits: list = dataclasses.field(default_factory=list)
    path: str = ''
    lines: dict = _lines()


@dataclasses.dataclass
class Flavor:
    """A nova flavor."""
    name: str
    vcpus: int = 1
    memory_mb: int = 512
    root_gb: int = 1
    ephemeral_gb: int = 0
    swap: int = 0
    extra_specs: dict = dataclasses.field(default_factory=dict)
    path: str = ''
    lines: dict = _lines()

    def to_flavor(self):
        """Return the engine's :class:`~nova_image_traits.flavor.Flavor`."""
        return nit_flavor.Flavor(
            vcpus=self.vcpus, memory_mb=self.memory_mb, root_gb=self.root_gb,
            ephemeral_gb=self.ephemeral_gb, swap=self.swap,
            extra_specs=dict(self.extra_specs), name=self.name)


@dataclasses.dataclass
class Image:
    """A Glance image: only its properties matter."""
    name: str
    properties: dict = dataclasses.field(default_factory=dict)
    path: str = ''
    lines: dict = _lines()


@dataclasses.dataclass
class Server:
    """A server booted on a host with a flavor and an image.

    :ivar allocations: provider name to ``{resource class: amount}``, or
        None to let placement choose them as at boot
    """
    name: str
    host: str
    flavor: str
    image: str
    allocations: ty.Optional[dict] = None
    path: str = ''
    lines: dict = _lines()


@dataclasses.dataclass
class Case:
    """A rebuild to judge: a server and its new image."""
    name: str
    server: str
    image: str
    description: str = ''
    path: str = ''
    lines: dict = _lines()


@dataclasses.dataclass
class Scenario:
    """A whole scenario; each list keeps the file's order."""
    source: str = ''
    description: str = ''
    sharing_providers: list = dataclasses.field(default_factory=list)
    hosts: list = dataclasses.field(default_factory=list)
    flavors: list = dataclasses.field(default_factory=list)
    images: list = dataclasses.field(default_factory=list)
    servers: list = dataclasses.field(default_factory=list)
    cases: list = dataclasses.field(default_factory=list)
    path: str = ''
    lines: dict = _lines()

    def by_name(self, kind):
        """Return ``{name: item}`` for ``kind`` ('hosts', 'images'...)."""
        return {item.name: item for item in getattr(self, kind)}

    def host_of(self, provider_name):
        """Return the host whose tree holds ``provider_name``, or None."""
        for host in self.hosts:
            if provider_name == host.name or provider_name in {
                    c.name for c in host.children}:
                return host
        return None


# -- field parsers ------------------------------------------------------------

def _kind(value):
    if value is None:
        return 'nothing'
    if isinstance(value, bool):
        return 'a boolean'
    if isinstance(value, int):
        return 'an integer'
    if isinstance(value, float):
        return 'a number'
    if isinstance(value, str):
        return 'a string %s' % nit_traits.quote(value)
    if isinstance(value, dict):
        return 'a mapping'
    if isinstance(value, list):
        return 'a list'
    return 'a %s' % type(value).__name__


def _string(value, walker):
    if not isinstance(value, str) or not value.strip():
        raise _Invalid('expected a non-empty string, got %s' % _kind(value))
    return value


def _text(value, walker):
    if value is None:
        return ''
    if not isinstance(value, str):
        raise _Invalid('expected a string, got %s' % _kind(value))
    return value


def _count(value, walker):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _Invalid('expected an integer >= 0, got %s' % _kind(value))
    return value


def _amount(value, walker):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _Invalid('expected an integer >= 1, got %s' % _kind(value))
    return value


def _boolean(value, walker):
    if not isinstance(value, bool):
        raise _Invalid('expected true or false, got %s' % _kind(value))
    return value


def _scalar_text(value, walker):
    """A property or extra spec value: any scalar, kept as nova's string."""
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, (str, int, float)):
        return str(value)
    raise _Invalid('expected a plain value, got %s' % _kind(value))


def _trait(value, walker):
    name = _string(value, walker)
    why = nit_traits.check_trait_name(name)
    if why:
        raise _Invalid('%s is not a valid trait: %s'
                       % (nit_traits.quote(name), why))
    return name


def _resource_class(value, walker):
    name = _string(value, walker)
    if _CUSTOM_RC.match(name):
        return name
    if name in os_resource_classes.STANDARDS:
        return name
    raise _Invalid('%s is neither a standard resource class nor a valid '
                   'CUSTOM_ one' % nit_traits.quote(name))


def _list_of(item):
    def parse(value, walker):
        if value is None:
            return []
        if not isinstance(value, list):
            raise _Invalid('expected a list, got %s' % _kind(value))
        return [walker.item(value, i, item) for i in range(len(value))]
    return parse


def _map_of(key, item):
    def parse(value, walker):
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise _Invalid('expected a mapping, got %s' % _kind(value))
        return {walker.key(value, k, key): walker.value(value, k, item)
                for k in value}
    return parse


def _record(cls, fields, required):
    """Parse a mapping into ``cls``; ``fields`` maps names to parsers."""
    def parse(value, walker):
        if not isinstance(value, dict):
            raise _Invalid('expected a mapping, got %s' % _kind(value))
        for key in value:
            if key not in fields:
                close = difflib.get_close_matches(str(key), fields, 1)
                hint = ('; did you mean %r?' % close[0] if close else
                        ' (known fields: %s)' % ', '.join(sorted(fields)))
                walker.fail_key(value, key, 'unknown field' + hint)
        for name in required:
            if name not in value:
                walker.fail(value.line, 'missing required field %r' % name)
        kwargs = {k: walker.value(value, k, fields[k]) for k in value}
        lines = {k: value.value_lines[k] for k in value}
        return cls(path=walker.path, lines=lines, **kwargs)
    return parse


# -- the walker ---------------------------------------------------------------

class _Walker(object):
    """Walks the loaded YAML, keeping the current field path."""

    def __init__(self, source):
        self.source = source
        self.path = ''

    def fail(self, line, message, field=None):
        raise ScenarioError(self.source, line, field or self.path or None,
                            message)

    def fail_key(self, mapping, key, message):
        self.fail(mapping.key_lines[key], message, self._join(str(key)))

    def _join(self, name):
        return '%s.%s' % (self.path, name) if self.path else name

    def _descend(self, suffix, line, parse, value):
        saved, self.path = self.path, suffix
        try:
            return parse(value, self)
        except _Invalid as e:
            message = str(e)
        finally:
            self.path = saved
        # NOTE: raised outside the except block so that the one-line error
        # carries no chained traceback.
        raise ScenarioError(self.source, line, suffix, message)

    def value(self, mapping, key, parse):
        return self._descend(self._join(str(key)), mapping.value_lines[key],
                             parse, mapping[key])

    def key(self, mapping, key, parse):
        return self._descend(self._join(str(key)), mapping.key_lines[key],
                             parse, key)

    def item(self, sequence, index, parse):
        return self._descend('%s[%d]' % (self.path, index),
                             sequence.item_lines[index], parse,
                             sequence[index])


_CHILD = _record(Child, {
    'name': _string, 'parent': _string,
    'inventory': _map_of(_resource_class, _amount),
    'traits': _list_of(_trait),
}, ['name'])

_HOST = _record(Host, {
    'name': _string, 'vcpus': _count, 'memory_mb': _count, 'disk_gb': _count,
    'traits': _list_of(_trait), 'aggregates': _list_of(_string),
    'children': _list_of(_CHILD), 'full': _boolean,
}, ['name'])

_SHARING = _record(SharingProvider, {
    'name': _string, 'aggregates': _list_of(_string),
    'inventory': _map_of(_resource_class, _amount),
    'traits': _list_of(_trait),
}, ['name', 'aggregates', 'inventory'])

_FLAVOR = _record(Flavor, {
    'name': _string, 'vcpus': _count, 'memory_mb': _count,
    'root_gb': _count, 'ephemeral_gb': _count, 'swap': _count,
    'extra_specs': _map_of(_string, _scalar_text),
}, ['name'])

_IMAGE = _record(Image, {
    'name': _string, 'properties': _map_of(_string, _scalar_text),
}, ['name'])

_SERVER = _record(Server, {
    'name': _string, 'host': _string, 'flavor': _string, 'image': _string,
    'allocations': _map_of(_string, _map_of(_resource_class, _amount)),
}, ['name', 'host', 'flavor', 'image'])

_CASE = _record(Case, {
    'name': _string, 'server': _string, 'image': _string,
    'description': _text,
}, ['name', 'server', 'image'])

_SCENARIO = _record(Scenario, {
    'description': _text,
    'sharing_providers': _list_of(_SHARING),
    'hosts': _list_of(_HOST),
    'flavors': _list_of(_FLAVOR),
    'images': _list_of(_IMAGE),
    'servers': _list_of(_SERVER),
    'cases': _list_of(_CASE),
}, ['hosts', 'flavors', 'images', 'servers', 'cases'])


# -- cross references ---------------------------------------------------------

def _ref_error(source, item, field, message):
    return ScenarioError(source, item.lines.get(field),
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


def _check_references(scn):
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
    if not scn.cases:
        raise ScenarioError(src, None, 'cases', 'the scenario has no case')

    hosts, sharing = scn.by_name('hosts'), scn.by_name('sharing_providers')
    for server in scn.servers:
        _known(src, server, 'host', hosts, 'host')
        _known(src, server, 'flavor', scn.by_name('flavors'), 'flavor')
        _known(src, server, 'image', scn.by_name('images'), 'image')
        host = hosts[server.host]
        reachable = {host.name} | {c.name for c in host.children} | {
            s.name for s in sharing.values()
            if set(s.aggregates) & set(host.aggregates)}
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


# -- entry points -------------------------------------------------------------

def loads(text, source='<string>'):
    """Parse and validate a scenario from YAML text.

    :param text: the YAML document
    :param source: the name used in error messages
    :returns: a :class:`Scenario`
    :raises ScenarioError: naming the line and field at fault
    """
    loader = _Loader(text)
    loader.source = source
    try:
        data = loader.get_single_data()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = e.problem or e.context or 'invalid YAML'
        raise ScenarioError(source, line, None,
                            'invalid YAML: %s' % problem)
    except yaml.YAMLError as e:
        raise ScenarioError(source, None, None, 'invalid YAML: %s' % e)
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        raise ScenarioError(source, getattr(data, 'line', None) or 1, None,
                            'a scenario is a mapping with hosts, flavors, '
                            'images, servers and cases; got %s'
                            % _kind(data))
    walker = _Walker(source)
    try:
        scn = _SCENARIO(data, walker)
    except _Invalid as e:
        raise ScenarioError(source, data.line, None, str(e))
    scn.source = source
    _check_references(scn)
    return scn


def load(path):
    """Read, parse and validate the scenario file ``path``.

    :raises ScenarioError: when the file cannot be read or is invalid
    """
    try:
        with open(path, encoding='utf-8') as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise ScenarioError(path, None, None,
                            'cannot read the scenario: %s' % (
                                getattr(e, 'strerror', None) or e))
    return loads(text, source=path)
