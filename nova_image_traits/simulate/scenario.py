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
"""The scenarios of ``nova-image-traits simulate``: model and loading.

A scenario describes a small cloud (compute hosts with nested providers,
sharing providers, flavors, images, servers) and the rebuilds to judge.
Its format is the JSON schema of :mod:`.schema`, shown in
``doc/source/admin/scenario-format.rst``; this module adds what a schema
cannot say (unique names, references) and builds the model.

Every error is a :class:`ScenarioError` whose text is one line naming the
file, the line and the field at fault.
"""

import dataclasses
import importlib.resources
import os
import typing as ty

from nova_image_traits import cli
from nova_image_traits import flavor as nit_flavor
from nova_image_traits.simulate import loader
from nova_image_traits.simulate import references
from nova_image_traits.simulate import schema

ScenarioError = loader.ScenarioError
SAMPLE = 'sample-cloud.yaml'


@dataclasses.dataclass
class _Item:
    """Where an item is: its field path and the line of each field.

    Neither has a default, so that the fields of each record, which have
    none either, may follow them (``kw_only`` needs Python 3.10);
    :func:`_item` passes every field by name.
    """
    path: str
    lines: dict = dataclasses.field(repr=False, compare=False)


# NOTE(founders): each item has the fields of its record in the schema,
# with the schema's defaults; :func:`_item` builds them, and a unit test
# checks that the two list the same fields.

@dataclasses.dataclass
class Child(_Item):
    """A nested provider under a compute host."""
    name: str
    parent: ty.Optional[str]
    inventory: dict
    traits: list


@dataclasses.dataclass
class Host(_Item):
    """A compute node: the root provider of its tree."""
    name: str
    vcpus: int
    memory_mb: int
    disk_gb: int
    traits: list
    aggregates: list
    children: list
    full: bool

    def tree(self):
        """Return the names of this host's providers, the root first."""
        return [self.name] + [c.name for c in self.children]


@dataclasses.dataclass
class SharingProvider(_Item):
    """A provider sharing its inventory with the hosts of its aggregates."""
    name: str
    aggregates: list
    inventory: dict
    traits: list


@dataclasses.dataclass
class Flavor(_Item):
    """A nova flavor."""
    name: str
    vcpus: int
    memory_mb: int
    root_gb: int
    ephemeral_gb: int
    swap: int
    extra_specs: dict

    def to_flavor(self):
        """Return the engine's :class:`~nova_image_traits.flavor.Flavor`."""
        return nit_flavor.Flavor(
            vcpus=self.vcpus, memory_mb=self.memory_mb, root_gb=self.root_gb,
            ephemeral_gb=self.ephemeral_gb, swap=self.swap,
            extra_specs=dict(self.extra_specs), name=self.name)


@dataclasses.dataclass
class Image(_Item):
    """A Glance image: its disk format and its properties."""
    name: str
    disk_format: ty.Optional[str]
    properties: dict

    def glance(self):
        """The image as Glance's API sends it: attributes and properties."""
        flat = dict(self.properties)
        if self.disk_format:
            flat['disk_format'] = self.disk_format
        return flat


@dataclasses.dataclass
class Server(_Item):
    """A server booted on a host with a flavor and an image.

    :ivar allocations: provider name to ``{resource class: amount}``, or
        None to let placement choose them as at boot
    :ivar recorded: the image properties it recorded (nova's ``image_*``
        system metadata) when its image changed since, or None
    """
    name: str
    host: str
    flavor: str
    image: str
    allocations: ty.Optional[dict]
    recorded: ty.Optional[dict]

    def current(self, images):
        """The properties of its current image, as it recorded them.

        :param images: the scenario's images by name
        """
        image = images[self.image]
        if self.recorded is None:
            return image.properties
        return dict(self.recorded)


@dataclasses.dataclass
class Case(_Item):
    """A rebuild to judge: a server and its new image.

    :ivar scheduler: nova's ``[scheduler]`` options for this case
    """
    name: str
    server: str
    image: str
    description: str
    scheduler: dict


@dataclasses.dataclass
class Scenario(_Item):
    """A whole scenario; each list keeps the file's order."""
    description: str
    sharing_providers: list
    hosts: list
    isolated_aggregates: dict
    flavors: list
    images: list
    servers: list
    cases: list
    source: str = ''

    def by_name(self, kind):
        """Return ``{name: item}`` for ``kind`` ('hosts', 'images'...)."""
        return {item.name: item for item in getattr(self, kind)}

    def sharing(self, host):
        """Return the sharing providers of the aggregates of ``host``."""
        return [sp for sp in self.sharing_providers
                if set(sp.aggregates) & set(host.aggregates)]


#: The class of each record of the schema, by its title.
CLASSES = {schema.CHILD['title']: Child, schema.HOST['title']: Host,
           schema.SHARING_PROVIDER['title']: SharingProvider,
           schema.FLAVOR['title']: Flavor, schema.IMAGE['title']: Image,
           schema.SERVER['title']: Server, schema.CASE['title']: Case,
           schema.SCHEMA['title']: Scenario}


# -- building the model from a valid document ---------------------------------

def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _nova_string(value):
    # NOTE(founders): YAML's true is nova's 'true', not Python's 'True'.
    return str(value).lower() if isinstance(value, bool) else str(value)


def _item(record, data, path):
    """Build a valid mapping's item, with the schema's defaults."""
    fields = {name: _plain(spec.get('default'))
              for name, spec in record['properties'].items()}
    fields.update((k, _plain(v)) for k, v in data.items() if v is not None)
    for name, spec in record['properties'].items():
        if 'title' in spec.get('items', {}):
            fields[name] = [
                _item(spec['items'], child, '%s[%d]' % (
                    '%s.%s' % (path, name) if path else name, index))
                for index, child in enumerate(data.get(name) or [])]
        elif (spec.get('additionalProperties') is schema.STRINGS and
              fields[name] is not None):
            fields[name] = {k: _nova_string(v)
                            for k, v in fields[name].items()}
    return CLASSES[record['title']](path=path, lines=dict(data.value_lines),
                                    **fields)


# -- entry points -------------------------------------------------------------

def loads(text, source='<string>'):
    """Parse and validate a scenario from YAML text.

    :param text: the YAML document
    :param source: the name used in error messages
    :returns: a :class:`Scenario`
    :raises ScenarioError: naming the line and field at fault
    """
    data = loader.parse(text, source)
    schema.validate(data, source)
    scn = _item(schema.SCHEMA, data, '')
    scn.source = source
    references.check(scn)
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


def sample_path():
    """Return the path of the bundled sample scenario.

    The sample ships inside this package and is found through
    :mod:`importlib.resources`, so a source checkout, an editable install
    and an installed wheel all read the same file. A copy for deployers to
    edit is also installed under ``<prefix>/etc/nova-image-traits/``.

    :raises UsageError: when the package holds no sample
    """
    resource = importlib.resources.files(__package__) / SAMPLE
    if not resource.is_file():
        raise cli.UsageError('cannot find the bundled %s; give --scenario '
                             'FILE' % SAMPLE)
    # NOTE(founders): a package installed on a file system (a wheel, an
    # editable install) gives a real path; load() reads paths.
    return os.path.realpath(str(resource))


def select(scn, names=(), hosts=()):
    """The cases named (all by default) whose servers are on ``hosts``.

    :raises UsageError: for an unknown name, or when no case is left
    """
    cases = scn.cases
    if names:
        known = scn.by_name('cases')
        unknown = [c for c in names if c not in known]
        if unknown:
            raise cli.UsageError('unknown case(s) %s; the scenario has: %s'
                                 % (', '.join(unknown), ', '.join(known)))
        cases = [c for c in cases if c.name in names]
    if hosts:
        servers = scn.by_name('servers')
        cases = [c for c in cases if servers[c.server].host in hosts]
    if not cases:
        raise cli.UsageError('no case matches --case/--host')
    return cases
